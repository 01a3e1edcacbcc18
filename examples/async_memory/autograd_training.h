// The seeds' memory experiment (d2l 8.2.4) as they wrote it: a Gluon-style network, autograd
// and a Trainer. The same batches as mlp_training.h (random normal inputs, target 1), through
// Dense(hidden, relu) -> Dense(hidden / 4, relu) -> Dense(1) with the L2 loss
// 0.5 * (out - y)^2 and SGD.
//
//   for (X, y) in batches:
//     with autograd.record(): l = loss(y, net(X))
//     if sync_each_batch: l.mean().asscalar()      # the seeds' synced loop
//     l.backward(); trainer.step(batch_size)
#pragma once

#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include "mlp_training.h"

namespace tandem::examples {

// Trains a fresh network on config.batches random batches; returns the last batch's mean loss
// (waiting for it).
inline double train_mlp_autograd(const MlpConfig& c) {
  namespace nn = tandem::nn;
  nd::random::seed(1);
  nn::Sequential net;
  net.add(nn::Dense(c.hidden, nn::relu)).add(nn::Dense(c.hidden / 4, nn::relu)).add(nn::Dense(1));
  net.initialize(nn::Normal(0.01));
  nn::Trainer trainer(net.collect_params(), nn::SGD(c.learning_rate));
  nd::NDArray mean_loss;
  for (int batch = 0; batch < c.batches; ++batch) {
    const nd::NDArray x = nd::random::normal({c.batch_size, c.inputs});
    const nd::NDArray y = nd::ones({c.batch_size, 1});
    nd::NDArray loss, total;
    {
      auto recording = autograd::record();
      loss = nd::square(net(x) - y) * 0.5;
      total = nd::sum(loss);  // recorded: backward starts from it
    }
    mean_loss = loss.mean();
    if (c.sync_each_batch) mean_loss.scalar<double>();
    total.backward();
    trainer.step(c.batch_size);
  }
  nd::waitall();
  return mean_loss.scalar<double>();
}

}  // namespace tandem::examples
