// The sim model's view of a kernel: element-wise kernels move every operand once and do the
// op list's operations per element; reductions read their input once; gemm does 2mnk
// operations over three matrices.
#pragma once

#include <cstdint>

#include "tandem/accel/stream.h"
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

}  // namespace tandem::ops
