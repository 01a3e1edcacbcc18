// The sim model's view of a kernel: element-wise kernels move every operand once and do the
// op list's operations per element; reductions read their input once; gemm does 2mnk
// operations over three matrices.
#pragma once

#include <cstdint>

#include "tandem/accel/stream.h"
#include "tandem/ops/conv_geometry.h"
#include "tandem/ops/dtype.h"

namespace tandem::ops {

inline WorkCost elementwise_cost(std::int64_t elements, DType dtype, int operands,
                                 double flops_per_element) {
  const double n = static_cast<double>(elements);
  return {.flops = n * flops_per_element,
          .bytes = n * static_cast<double>(dtype_size(dtype)) * operands};
}

inline WorkCost gemm_cost(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) {
  const double size = static_cast<double>(dtype_size(dtype));
  return {.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
          .bytes = size * static_cast<double>(m * k + k * n + m * n)};
}

// A convolution (or either of its gradients) is one gemm per image: out_channels x (out_h out_w)
// outputs, each an inner product of in_channels / groups x kernel_h x kernel_w terms.
inline WorkCost conv_cost(const Conv2dGeometry& g, DType dtype) {
  WorkCost cost = gemm_cost(g.out_channels, g.col_cols(), g.col_rows(), dtype);
  cost.flops *= static_cast<double>(g.batch);
  cost.bytes *= static_cast<double>(g.batch);
  return cost;
}

// Pooling (or its gradient) visits kernel_h x kernel_w inputs per output.
inline WorkCost pool_cost(const Pool2dGeometry& g, DType dtype) {
  const std::int64_t outputs = g.batch * g.channels * g.out_h * g.out_w;
  return elementwise_cost(outputs, dtype, 2, static_cast<double>(g.kernel_h * g.kernel_w));
}

}  // namespace tandem::ops
