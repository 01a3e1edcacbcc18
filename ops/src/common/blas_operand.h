// How a row-major 2-D operand of gemm is handed to a BLAS: as stored (row by row), or as the
// transpose of a column-by-column matrix, with the stride between its rows (or columns) as the
// leading dimension. The CPU kernel passes it to row-major CBLAS; the CUDA kernel to cuBLAS,
// which reads the same description column-major (see ops/cuda/gemm.cu).
#pragma once

#include <algorithm>
#include <cstdint>

#include "tandem/ops/array_view.h"

namespace tandem::ops {

// Not `usable` when the layout has no such description: the operand is then packed first.
struct BlasOperand {
  bool usable = false;
  bool transposed = false;
  std::int64_t leading = 0;
};

inline BlasOperand describe_for_blas(const ArrayView& v) {
  const std::int64_t rows = v.shape[0], cols = v.shape[1];
  // A dimension of extent 1 may carry any stride; give it the one BLAS expects.
  const std::int64_t s0 = rows == 1 ? std::max<std::int64_t>(cols, 1) : v.strides[0];
  const std::int64_t s1 = cols == 1 ? 1 : v.strides[1];
  if (s1 == 1 && s0 >= std::max<std::int64_t>(cols, 1)) return {true, false, s0};
  const std::int64_t t0 = rows == 1 ? 1 : v.strides[0];
  const std::int64_t t1 = cols == 1 ? std::max<std::int64_t>(rows, 1) : v.strides[1];
  if (t0 == 1 && t1 >= std::max<std::int64_t>(rows, 1)) return {true, true, t1};
  return {};
}

// The leading dimension of gemm's m x n output `c`, whose rows have unit stride.
inline std::int64_t output_leading(const ArrayView& c) {
  const std::int64_t m = c.shape[0], n = c.shape[1];
  return m == 1 ? std::max<std::int64_t>(n, 1) : c.strides[0];
}

}  // namespace tandem::ops
