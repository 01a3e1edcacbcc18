// A training-like loop in the spirit of the seeds' memory experiment (d2l 8.2.4): batches of
// random data through a two-layer perceptron with hand-written gradients and SGD updates, every
// step an NDArray op queued on the engine. Shared by examples/async_memory and the frontend
// benchmark (bench/frontend), which measure its peak memory with and without a sync per batch.
#pragma once

#include <tandem/tandem.h>

#include <cstdint>

namespace tandem::examples {

struct MlpConfig {
  std::int64_t inputs = 512;
  std::int64_t hidden = 1024;
  std::int64_t batch_size = 1024;
  int batches = 100;
  double learning_rate = 0.005;
  // Read each batch's loss back (a sync point, like `l.mean().asscalar()` in the seeds).
  bool sync_each_batch = true;
};

// Trains a fresh perceptron inputs -> hidden (ReLU) -> 1 on random batches with target 1 and
// returns the last batch's mean squared error (waiting for it).
inline double train_mlp(const MlpConfig& c) {
  namespace nd = tandem::nd;
  nd::random::seed(1);
  nd::NDArray w1 = nd::random::normal({c.inputs, c.hidden}, {.stddev = 0.01});
  nd::NDArray b1 = nd::zeros({c.hidden});
  nd::NDArray w2 = nd::random::normal({c.hidden, 1}, {.stddev = 0.01});
  nd::NDArray b2 = nd::zeros({1});
  nd::NDArray loss;
  for (int batch = 0; batch < c.batches; ++batch) {
    const nd::NDArray x = nd::random::normal({c.batch_size, c.inputs});
    const nd::NDArray y = nd::ones({c.batch_size, 1});
    // Forward.
    const nd::NDArray pre = nd::dot(x, w1) + b1;
    const nd::NDArray h = nd::relu(pre);
    const nd::NDArray diff = nd::dot(h, w2) + b2 - y;
    loss = nd::mean(nd::square(diff));
    // Backward (d loss / d out = 2 diff / batch_size), then SGD.
    const nd::NDArray d_out = diff * (2.0 / static_cast<double>(c.batch_size));
    const nd::NDArray d_pre = nd::dot(d_out, w2.T()) * (pre > 0.0);
    w2 -= nd::dot(h.T(), d_out) * c.learning_rate;
    b2 -= nd::sum(d_out, 0) * c.learning_rate;
    w1 -= nd::dot(x.T(), d_pre) * c.learning_rate;
    b1 -= nd::sum(d_pre, 0) * c.learning_rate;
    if (c.sync_each_batch) loss.scalar<double>();
  }
  nd::waitall();
  return loss.scalar<double>();
}

}  // namespace tandem::examples
