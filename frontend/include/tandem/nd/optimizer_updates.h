// Optimizer updates in place, one op each (MXNet's nd.sgd_update, sgd_mom_update and
// adam_update): what nn::SGD and nn::Adam queue for each parameter.
//
//   nd::sgd_update(weight, grad, {.learning_rate = 0.1, .rescale_grad = 1.0 / 64});
//   nd::sgd_mom_update(weight, grad, momentum, {.learning_rate = 0.1, .momentum = 0.9});
//
// The result is bit for bit the one of the unfused element-wise ops the comments below spell
// out, with each scalar converted to the arrays' dtype first; one op instead of two to seven
// is what matters on an accelerator, where each op costs a launch. Arrays in any layout are
// accepted (a strided or partly overlapping operand runs the unfused ops). Every array must be
// floating, of the weight's shape, dtype and device; the weight (and the state arrays) must not
// need a gradient while autograd records. Nothing waits: the update is queued.
#pragma once

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

struct SgdUpdateOptions {
  double learning_rate = 0.01;
  double momentum = 0.0;      // sgd_mom_update only
  double wd = 0.0;            // weight decay
  double rescale_grad = 1.0;  // the gradient's scale (1 / batch size)
};

// weight *= 1 - lr * wd (when wd != 0); weight -= grad * (lr * rescale_grad).
void sgd_update(NDArray& weight, const NDArray& grad, const SgdUpdateOptions& options);

// momentum *= options.momentum; momentum -= grad * (lr * rescale_grad);
// momentum -= weight * (lr * wd) (when wd != 0); weight += momentum.
void sgd_mom_update(NDArray& weight, const NDArray& grad, NDArray& momentum,
                    const SgdUpdateOptions& options);

struct AdamUpdateOptions {
  double learning_rate = 0.001;  // with this step's bias corrections folded in
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double wd = 0.0;
  double rescale_grad = 1.0;
};

// g = grad * rescale_grad (when != 1) + weight * wd (when wd != 0);
// mean = mean * beta1 + g * (1 - beta1); var = var * beta2 + square(g) * (1 - beta2);
// weight -= mean / (sqrt(var) + epsilon) * learning_rate.
void adam_update(NDArray& weight, const NDArray& grad, NDArray& mean, NDArray& var,
                 const AdamUpdateOptions& options);

}  // namespace tandem::nd
