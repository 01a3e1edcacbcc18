// Matrix product on the CPU: c = a · b for 2-D views a (m x k), b (k x n), c (m x n), or
// c += a · b when `accumulate` (BLAS's beta = 1, the products added into c as they are formed).
//
// float32/float64 go to CBLAS (OpenBLAS). To keep engine workers x BLAS threads within the
// cores, OpenBLAS is set to one thread the first time a gemm runs, and a big product is split
// into row blocks of a and c that run as a tbb::parallel_for in the engine's arena, each block
// one single-threaded BLAS call. The row blocks depend on the matrix sizes and the machine's
// hardware thread count only, never on which threads are free. a and b may be transposed or
// row-strided views (passed to BLAS as such); other layouts are packed first. c must have unit
// stride along its rows. Integer types use a plain loop that wraps around on overflow.
#pragma once

#include "tandem/ops/array_view.h"

namespace tandem::ops::cpu {

void gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c, bool accumulate = false);

// Sets OpenBLAS to one thread (once per process); gemm calls it itself. Exposed so that a
// program that also calls BLAS directly can see the setting tandem relies on.
void configure_blas_threads();

}  // namespace tandem::ops::cpu
