// Matrix products and transposes.
//
//   auto x = nd::random::uniform({2000, 2000});
//   auto y = nd::dot(x, x);             // 2000x2000, through CBLAS (OpenBLAS)
//   auto v = nd::dot(x, nd::ones({2000}));   // matrix x vector: shape 2000
//   auto t = nd::transpose(x);          // a view: no copy; dot(t, x) passes it to BLAS as is
//
// dot: 2-D x 2-D, 2-D x 1-D, 1-D x 2-D, and 1-D x 1-D (shape 1). Inputs share device and dtype;
// inner dimensions must agree (tandem::Error at the call naming both shapes).
#pragma once

#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

NDArray dot(const NDArray& a, const NDArray& b);
// Axes reversed, as a view sharing x's storage.
NDArray transpose(const NDArray& x);
// Axes permuted: result dimension i is x's dimension axes[i]; a view.
NDArray transpose(const NDArray& x, const std::vector<int>& axes);

}  // namespace tandem::nd
