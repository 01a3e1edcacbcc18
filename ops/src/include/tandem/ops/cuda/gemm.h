// Matrix product on a gpu(i): c = a · b for 2-D views a (m x k), b (k x n), c (m x n), the
// gpu(i) form of tandem/ops/cpu/gemm.h. float32/float64 call cuBLAS (sgemm/dgemm, 64-bit
// sizes) on the stream's cuBLAS handle, row-major through the transposition identity
// c^T = b^T · a^T; a and b may be transposed or row-strided views, other layouts are packed
// first; c must have unit stride along its rows. Integer types run a plain kernel that wraps
// around on overflow, like the CPU. `stream` must be a gpu(i) compute stream. `accumulate`:
// c += a · b (cuBLAS beta = 1).
#pragma once

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops::cuda {

void gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c, tandem::Stream& stream,
          bool accumulate = false);

}  // namespace tandem::ops::cuda
