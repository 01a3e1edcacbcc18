// SGD and Adam: each update one op on the parameter's device (nd/optimizer_updates.h).
#include "tandem/nn/optimizer.h"

#include <cmath>
#include <sstream>

#include "tandem/errors.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/optimizer_updates.h"

namespace tandem::nn {

namespace {

// A value that would turn every weight into NaN or inf at the first step is refused where it is
// set, naming the optimizer, the value's role and the value.
void check_value(const char* optimizer, const char* what, double value, bool ok,
                 const char* expected) {
  if (!ok) {
    std::ostringstream message;
    message << "tandem: " << optimizer << ": " << what << " must be " << expected << ", got "
            << value;
    throw Error(message.str());
  }
}

bool finite_non_negative(double value) {
  return std::isfinite(value) && value >= 0.0;
}

}  // namespace

Optimizer::Optimizer(double learning_rate, double wd) : learning_rate_(learning_rate), wd_(wd) {
  check_value("optimizer", "the learning rate", learning_rate, finite_non_negative(learning_rate),
              "a finite number >= 0");
  check_value("optimizer", "the weight decay (wd)", wd, finite_non_negative(wd),
              "a finite number >= 0");
}

void Optimizer::set_learning_rate(double learning_rate) {
  check_value(name().c_str(), "the learning rate", learning_rate,
              finite_non_negative(learning_rate), "a finite number >= 0");
  learning_rate_ = learning_rate;
}

void Optimizer::set_rescale_grad(double rescale_grad) {
  check_value(name().c_str(), "rescale_grad", rescale_grad, std::isfinite(rescale_grad),
              "a finite number");
  rescale_grad_ = rescale_grad;
}

SGD::SGD(double learning_rate, double momentum, double wd)
    : Optimizer(learning_rate, wd), momentum_(momentum) {
  check_value("sgd", "momentum", momentum, momentum >= 0.0 && momentum <= 1.0, "in [0, 1]");
}

Adam::Adam(double learning_rate, double beta1, double beta2, double epsilon, double wd)
    : Optimizer(learning_rate, wd), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {
  check_value("adam", "beta1", beta1, beta1 >= 0.0 && beta1 < 1.0, "in [0, 1)");
  check_value("adam", "beta2", beta2, beta2 >= 0.0 && beta2 < 1.0, "in [0, 1)");
  check_value("adam", "epsilon", epsilon, std::isfinite(epsilon) && epsilon > 0.0,
              "a finite number > 0");
}

void Optimizer::update_all(long t, std::span<const ParameterUpdate> updates) const {
  for (std::size_t i = 0; i < updates.size(); ++i) {
    try {
      update(t, *updates[i].weight, *updates[i].grad, *updates[i].state);
    } catch (const nd::UpdateEntryError&) {
      throw;
    } catch (const Error& error) {
      throw nd::UpdateEntryError(i, error.what());
    }
  }
}

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

void SGD::update_all(long /*t*/, std::span<const ParameterUpdate> updates) const {
  const nd::SgdUpdateOptions options{.learning_rate = learning_rate(),
                                     .momentum = momentum_,
                                     .wd = wd(),
                                     .rescale_grad = rescale_grad()};
  std::vector<nd::NDArray> weights, grads, momenta;
  for (const ParameterUpdate& u : updates) {
    weights.push_back(*u.weight);
    grads.push_back(*u.grad);
    if (momentum_ != 0.0) momenta.push_back(u.state->at(0));
  }
  if (momentum_ == 0.0) {
    nd::multi_sgd_update(weights, grads, options);
  } else {
    nd::multi_sgd_mom_update(weights, grads, momenta, options);
  }
}

std::vector<nd::NDArray> Adam::create_state(const nd::NDArray& weight) const {
  return {nd::zeros_like(weight), nd::zeros_like(weight)};
}

nd::AdamUpdateOptions Adam::options_at(long t) const {
  const double steps = static_cast<double>(t);
  const double corrected_lr =
      learning_rate() * std::sqrt(1.0 - std::pow(beta2_, steps)) / (1.0 - std::pow(beta1_, steps));
  return {.learning_rate = corrected_lr,
          .beta1 = beta1_,
          .beta2 = beta2_,
          .epsilon = epsilon_,
          .wd = wd(),
          .rescale_grad = rescale_grad()};
}

void Adam::update(long t, nd::NDArray& weight, const nd::NDArray& grad,
                  std::vector<nd::NDArray>& state) const {
  nd::adam_update(weight, grad, state.at(0), state.at(1), options_at(t));
}

void Adam::update_all(long t, std::span<const ParameterUpdate> updates) const {
  std::vector<nd::NDArray> weights, grads, means, variances;
  for (const ParameterUpdate& u : updates) {
    weights.push_back(*u.weight);
    grads.push_back(*u.grad);
    means.push_back(u.state->at(0));
    variances.push_back(u.state->at(1));
  }
  nd::multi_adam_update(weights, grads, means, variances, options_at(t));
}

}  // namespace tandem::nn
