// Optimizer updates in place on the CPU (kernels.h's sgd_update and adam_update rows say what
// they compute): one pass over dense views of one shape and floating dtype, in parallel blocks;
// every element is computed with the operations of the unfused element-wise ops, in their order
// and dtype, so the bits are those of nn::SGD's and nn::Adam's op-by-op updates.

#include <cstdint>

#include "common/floating_checks.h"
#include "common/optimizer_step.h"
#include "kernel_declarations.h"
#include "parallel.h"

namespace tandem::ops::cpu {

void sgd_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& momentum_buffer,
                double grad_scale, double decay, double momentum) {
  const char* op = "sgd_update";
  const std::int64_t n = update_elements(op, weight, {&grad, &momentum_buffer});
  dispatch_floating(weight.dtype, op, [&]<class T>(T) {
    const SgdElement<T> element(grad_scale, decay, momentum);
    T* w = weight.typed<T>();
    const T* g = grad.typed<const T>();
    T* m = momentum_buffer.data != nullptr ? momentum_buffer.typed<T>() : nullptr;
    parallel_blocks(n, kElementwiseBlock, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      if (m == nullptr) {
        for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i]);
      } else {
        for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i], m[i]);
      }
    });
  });
}

void adam_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& mean,
                 const ArrayView& var, const AdamStep& step) {
  const char* op = "adam_update";
  const std::int64_t n = update_elements(op, weight, {&grad, &mean, &var});
  dispatch_floating(weight.dtype, op, [&]<class T>(T) {
    const AdamElement<T> element(step);
    T* w = weight.typed<T>();
    const T* g = grad.typed<const T>();
    T* m = mean.typed<T>();
    T* v = var.typed<T>();
    parallel_blocks(n, kElementwiseBlock, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i], m[i], v[i]);
    });
  });
}

}  // namespace tandem::ops::cpu
