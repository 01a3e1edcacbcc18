// BatchNorm: batch normalization over every axis but the channel axis 1 (Gluon's
// nn.BatchNorm).
//
//   net.add(nn::Dense(64)).add(nn::BatchNorm()).add(nn::Activation(nn::relu));
//
// While training (autograd::record() in train mode) it normalizes with the batch's statistics
// and updates the running averages (running = momentum * running + (1 - momentum) * batch);
// in prediction it uses the running averages. Parameters: gamma (ones) and beta (zeros),
// trained; running_mean (zeros) and running_var (ones), grad_req null. The channel count is
// inferred at the first forward when in_channels is 0.
#pragma once

#include <cstdint>
#include <memory>

#include "tandem/nn/block.h"

namespace tandem::nn {

struct BatchNormOptions {
  double momentum = 0.9;
  double epsilon = 1e-5;
  std::int64_t in_channels = 0;  // 0: inferred at the first forward
  nd::DType dtype = nd::float32;
};

class BatchNorm : public Block {
 public:
  explicit BatchNorm(BatchNormOptions options = {});
  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;

  Parameter& gamma() const { return *gamma_; }
  Parameter& beta() const { return *beta_; }
  Parameter& running_mean() const { return *running_mean_; }
  Parameter& running_var() const { return *running_var_; }

 private:
  BatchNormOptions options_;
  std::shared_ptr<Parameter> gamma_, beta_, running_mean_, running_var_;
};

}  // namespace tandem::nn
