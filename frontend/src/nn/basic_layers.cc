// Flatten and Dropout, on the network ops.
#include "tandem/nn/basic_layers.h"

#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"

namespace tandem::nn {

std::shared_ptr<Block> Flatten::clone_structure() const {
  return std::make_shared<Flatten>();
}

// The clone draws the masks of a fresh layer with the same seed (its call count starts at 0).
std::shared_ptr<Block> Dropout::clone_structure() const {
  return std::make_shared<Dropout>(rate_, seed_);
}

nd::NDArray Flatten::forward(const nd::NDArray& x) {
  return nd::flatten(x);
}

Dropout::Dropout(double rate, std::uint64_t seed) : rate_(rate), seed_(seed) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    throw Error("tandem: Dropout: the rate must be in [0, 1), got " + std::to_string(rate));
  }
}

nd::NDArray Dropout::forward(const nd::NDArray& x) {
  if (!autograd::is_training() || rate_ == 0.0) return x;
  // A new mask for every call: the seed advances with the call count (no sync, reproducible).
  return nd::dropout(x, rate_, seed_ * 0x9E3779B97F4A7C15ull + calls_++);
}

}  // namespace tandem::nn
