#include "tiny_mlp_step.h"

#include <tandem/nd/autograd.h>
#include <tandem/nd/network.h>
#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace tandem::bench {

namespace {

constexpr std::int64_t kBatch = 16, kInputs = 64, kHidden = 64, kClasses = 10;
constexpr double kLearningRate = 0.1;

struct Batches {
  std::vector<nd::NDArray> images, labels;
};

Batches make_batches(const data::DigitsDataSet& digits) {
  const nd::NDArray images = digits.train.images.reshape({-1, kInputs});
  Batches batches;
  for (std::int64_t row = 0; row + kBatch <= images.shape()[0]; row += kBatch) {
    batches.images.push_back(images.slice(row, row + kBatch).copy());
    batches.labels.push_back(digits.train.labels.slice(row, row + kBatch).copy());
  }
  nd::waitall();
  return batches;
}

// Autograd and the Trainer, as a user writes it.
class AutogradStep {
 public:
  AutogradStep() {
    net_.add(nn::Dense(kHidden, nn::relu, {.in_units = kInputs}))
        .add(nn::Dense(kClasses, nn::ActivationType::none, {.in_units = kHidden}));
    net_.initialize(nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3.0, 1));
    trainer_ = std::make_unique<nn::Trainer>(net_.collect_params(), nn::SGD(kLearningRate));
  }
  void operator()(const nd::NDArray& x, const nd::NDArray& y) {
    nd::NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::softmax_cross_entropy(net_(x), y).sum();
    }
    loss.backward();
    trainer_->step(kBatch);
  }

 private:
  nn::Sequential net_;
  std::unique_ptr<nn::Trainer> trainer_;
};

// The same network, loss and SGD step with the gradients written out.
class HandwrittenStep {
 public:
  HandwrittenStep() {
    nd::random::seed(1);
    w1_ = nd::random::normal({kHidden, kInputs}, {.stddev = 0.1});
    b1_ = nd::zeros({kHidden});
    w2_ = nd::random::normal({kClasses, kHidden}, {.stddev = 0.1});
    b2_ = nd::zeros({kClasses});
  }
  void operator()(const nd::NDArray& x, const nd::NDArray& y) {
    const nd::NDArray pre = nd::dot(x, w1_.T()) + b1_;
    const nd::NDArray h = nd::relu(pre);
    const nd::NDArray logits = nd::dot(h, w2_.T()) + b2_;
    // d (sum of the losses) / d logits = softmax(logits) - one_hot(labels).
    const nd::NDArray d_logits = nd::softmax(logits) - nd::one_hot(y, kClasses);
    const nd::NDArray d_pre = nd::dot(d_logits, w2_) * (pre > 0.0);
    const double scale = kLearningRate / static_cast<double>(kBatch);
    w2_ -= nd::dot(d_logits.T(), h) * scale;
    b2_ -= nd::sum(d_logits, 0) * scale;
    w1_ -= nd::dot(d_pre.T(), x) * scale;
    b1_ -= nd::sum(d_pre, 0) * scale;
  }

 private:
  nd::NDArray w1_, b1_, w2_, b2_;
};

// Seconds per step of `steps` steps after a warm-up, waiting only at the end.
template <class Step>
double time_steps(Step& step, const Batches& batches, int steps) {
  const std::size_t count = batches.images.size();
  for (std::size_t i = 0; i < 20; ++i) step(batches.images[i % count], batches.labels[i % count]);
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    const std::size_t b = static_cast<std::size_t>(i) % count;
    step(batches.images[b], batches.labels[b]);
  }
  nd::waitall();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
}

}  // namespace

void run_tiny_mlp_step(const data::DigitsDataSet& digits, bool quick, Records& records) {
  const Batches batches = make_batches(digits);
  const int steps = quick ? 1000 : 3000;
  const int rounds = quick ? 7 : 9;
  AutogradStep autograd_step;
  HandwrittenStep handwritten_step;
  std::vector<double> autograd_times, handwritten_times;
  // Interleaved rounds, so that both see the same machine noise; the median of each.
  for (int round = 0; round < rounds; ++round) {
    autograd_times.push_back(time_steps(autograd_step, batches, steps));
    handwritten_times.push_back(time_steps(handwritten_step, batches, steps));
  }
  const auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  const double with_autograd = median(autograd_times);
  const double handwritten = median(handwritten_times);
  std::printf(
      "tiny_mlp_step (64-64-10, batch 16, %d steps x %d rounds): autograd %.1f us, "
      "hand-written %.1f us, ratio %.2f\n",
      steps, rounds, with_autograd * 1e6, handwritten * 1e6, with_autograd / handwritten);
  for (const auto& [system, seconds] :
       {std::pair{"tandem", with_autograd}, std::pair{"tandem_handwritten", handwritten}}) {
    records.push_back({{"workload", "tiny_mlp_step"},
                       {"system", system},
                       {"device", "cpu(0)"},
                       {"seconds_per_step", seconds},
                       {"batch_size", kBatch},
                       {"hidden", kHidden},
                       {"steps", steps},
                       {"rounds", rounds}});
  }
}

}  // namespace tandem::bench
