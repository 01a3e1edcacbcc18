// SGD and Adam: each update a few NDArray ops on the parameter's device.
#include "tandem/nn/optimizer.h"

#include <cmath>

#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"

namespace tandem::nn {

nd::NDArray Optimizer::effective_grad(const nd::NDArray& weight, const nd::NDArray& grad) const {
  nd::NDArray g = rescale_grad_ == 1.0 ? grad : grad * rescale_grad_;
  if (wd_ != 0.0) g = g + weight * wd_;
  return g;
}

std::vector<nd::NDArray> SGD::create_state(const nd::NDArray& weight) const {
  if (momentum_ == 0.0) return {};
  return {nd::zeros_like(weight)};
}

void SGD::update(long /*t*/, nd::NDArray& weight, const nd::NDArray& grad,
                 std::vector<nd::NDArray>& state) const {
  // The scalars are folded so that a plain step is two ops: weight -= grad * (lr * rescale).
  const double grad_scale = learning_rate() * rescale_grad();
  const double decay = learning_rate() * wd();
  if (momentum_ == 0.0) {
    if (decay != 0.0) weight *= 1.0 - decay;
    weight -= grad * grad_scale;
    return;
  }
  nd::NDArray& mom = state.at(0);
  mom *= momentum_;
  mom -= grad * grad_scale;
  if (decay != 0.0) mom -= weight * decay;
  weight += mom;
}

std::vector<nd::NDArray> Adam::create_state(const nd::NDArray& weight) const {
  return {nd::zeros_like(weight), nd::zeros_like(weight)};
}

void Adam::update(long t, nd::NDArray& weight, const nd::NDArray& grad,
                  std::vector<nd::NDArray>& state) const {
  const nd::NDArray g = effective_grad(weight, grad);
  nd::NDArray& mean = state.at(0);
  nd::NDArray& var = state.at(1);
  mean *= beta1_;
  mean += g * (1.0 - beta1_);
  var *= beta2_;
  var += nd::square(g) * (1.0 - beta2_);
  const double steps = static_cast<double>(t);
  const double corrected_lr =
      learning_rate() * std::sqrt(1.0 - std::pow(beta2_, steps)) / (1.0 - std::pow(beta1_, steps));
  weight -= mean / (nd::sqrt(var) + epsilon_) * corrected_lr;
}

}  // namespace tandem::nn
