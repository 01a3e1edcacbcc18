// SGD and Adam: each update one op on the parameter's device (nd/optimizer_updates.h).
#include "tandem/nn/optimizer.h"

#include <cmath>

#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/optimizer_updates.h"

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
  // One op per parameter (nd/optimizer_updates.h): weight -= grad * (lr * rescale), with
  // momentum and weight decay folded in.
  const nd::SgdUpdateOptions options{.learning_rate = learning_rate(),
                                     .momentum = momentum_,
                                     .wd = wd(),
                                     .rescale_grad = rescale_grad()};
  if (momentum_ == 0.0) {
    nd::sgd_update(weight, grad, options);
  } else {
    nd::sgd_mom_update(weight, grad, state.at(0), options);
  }
}

std::vector<nd::NDArray> Adam::create_state(const nd::NDArray& weight) const {
  return {nd::zeros_like(weight), nd::zeros_like(weight)};
}

void Adam::update(long t, nd::NDArray& weight, const nd::NDArray& grad,
                  std::vector<nd::NDArray>& state) const {
  const double steps = static_cast<double>(t);
  const double corrected_lr =
      learning_rate() * std::sqrt(1.0 - std::pow(beta2_, steps)) / (1.0 - std::pow(beta1_, steps));
  nd::adam_update(weight, grad, state.at(0), state.at(1),
                  {.learning_rate = corrected_lr,
                   .beta1 = beta1_,
                   .beta2 = beta2_,
                   .epsilon = epsilon_,
                   .wd = wd(),
                   .rescale_grad = rescale_grad()});
}

}  // namespace tandem::nn
