// Optimizer updates in place on a gpu(i), the gpu(i) form of ops/src/cpu/optimizer_update.cc
// (same operations per element, so the same bits: ops/ is compiled without FMA contraction):
// one grid-stride kernel per update. `stream` must be a gpu(i) compute stream.
#include <cstdint>

#include "common/floating_checks.h"
#include "common/optimizer_step.h"
#include "kernel_declarations.h"
#include "launch.cuh"

namespace tandem::ops::cuda {

namespace {

template <class T>
__global__ void sgd_kernel(T* w, const T* g, T* m, std::int64_t n, SgdElement<T> element) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    if (m == nullptr) {
      element(w[i], g[i]);
    } else {
      element(w[i], g[i], m[i]);
    }
  }
}

template <class T>
__global__ void adam_kernel(T* w, const T* g, T* mean, T* var, std::int64_t n,
                            AdamElement<T> element) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    element(w[i], g[i], mean[i], var[i]);
  }
}

}  // namespace

void sgd_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& momentum_buffer,
                double grad_scale, double decay, double momentum, tandem::Stream& stream) {
  const char* op = "sgd_update";
  const std::int64_t n = update_elements(op, weight, {&grad, &momentum_buffer});
  if (n == 0) return;
  Launch launch(stream, op);
  dispatch_floating(weight.dtype, op, [&]<class T>(T) {
    T* m = momentum_buffer.data != nullptr ? momentum_buffer.typed<T>() : nullptr;
    sgd_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
        weight.typed<T>(), grad.typed<const T>(), m, n, SgdElement<T>(grad_scale, decay, momentum));
    launch.launched();
  });
}

void adam_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& mean,
                 const ArrayView& var, const AdamStep& step, tandem::Stream& stream) {
  const char* op = "adam_update";
  const std::int64_t n = update_elements(op, weight, {&grad, &mean, &var});
  if (n == 0) return;
  Launch launch(stream, op);
  dispatch_floating(weight.dtype, op, [&]<class T>(T) {
    adam_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
        weight.typed<T>(), grad.typed<const T>(), mean.typed<T>(), var.typed<T>(), n,
        AdamElement<T>(step));
    launch.launched();
  });
}

}  // namespace tandem::ops::cuda
