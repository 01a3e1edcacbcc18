// Layers without parameters: Flatten and Dropout.
//
//   net.add(nn::Flatten()).add(nn::Dense(64, nn::relu)).add(nn::Dropout(0.5)).add(nn::Dense(10));
#pragma once

#include <cstdint>

#include "tandem/nn/block.h"

namespace tandem::nn {

// (batch, d1, d2, ...) -> (batch, d1 * d2 * ...).
class Flatten : public Block {
 public:
  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;
};

// While training (autograd::record() in train mode), zeroes each element with probability
// `rate` and scales the others by 1 / (1 - rate); in prediction it is the identity. The mask
// comes from a counter-based generator: the layer's seed and its call count pick it, so a run
// is reproducible and nothing waits.
class Dropout : public Block {
 public:
  explicit Dropout(double rate, std::uint64_t seed = 0);
  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;
  double rate() const { return rate_; }

 private:
  double rate_;
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;
};

}  // namespace tandem::nn
