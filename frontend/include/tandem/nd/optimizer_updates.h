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
//
// The multi_ forms update many parameters at once (MXNet's multi_sgd_update, PyTorch's foreach
// optimizers): entry i gets the bits sgd_update(weights[i], grads[i], options) would give it,
// but the entries on one device with one dtype are one op (one kernel launch on a GPU, where a
// training step's updates would otherwise be a launch per parameter):
//
//   nd::multi_sgd_mom_update(weights, grads, momenta, {.learning_rate = 0.1, .momentum = 0.9});
//
// An entry the grouped kernel cannot take (a strided array, or one sharing memory with another
// entry's arrays) gets its own update, queued after the groups in entry order, so every entry
// sees the others' updates as a loop over the single-entry calls would. Every entry is checked
// before anything is queued: a bad one throws UpdateEntryError naming it, and nothing is
// updated.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "tandem/errors.h"
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

// What the multi_ updates throw for a bad entry (a dtype, shape or device that does not match
// its weight's, a weight that is not floating, ...): the message names the op and the entry;
// entry() is its index.
class UpdateEntryError : public Error {
 public:
  UpdateEntryError(std::size_t entry, const std::string& what) : Error(what), entry_(entry) {}
  std::size_t entry() const { return entry_; }

 private:
  std::size_t entry_;
};

// The spans must have one element per entry; a length mismatch is a tandem::Error.
void multi_sgd_update(std::span<NDArray> weights, std::span<const NDArray> grads,
                      const SgdUpdateOptions& options);
void multi_sgd_mom_update(std::span<NDArray> weights, std::span<const NDArray> grads,
                          std::span<NDArray> momenta, const SgdUpdateOptions& options);
void multi_adam_update(std::span<NDArray> weights, std::span<const NDArray> grads,
                       std::span<NDArray> means, std::span<NDArray> vars,
                       const AdamUpdateOptions& options);

}  // namespace tandem::nd
