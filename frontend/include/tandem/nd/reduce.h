// Reductions over a whole array or along one axis.
//
//   auto x = nd::arange(6).reshape({2, 3});   // [[0 1 2] [3 4 5]]
//   nd::sum(x)            // [15.]  shape 1 (whole array, like MXNet)
//   nd::sum(x, 0)         // [3. 5. 7.]  shape 3
//   nd::max(x, -1, true)  // [[2.] [5.]]  shape 2x1 (keepdims)
//   nd::argmax(x, 1)      // [2 2]  int64
//
// The result has the input's dtype, except argmax (int64 indices; the first of equal values;
// the row-major index for the whole array). Sums accumulate in double or int64. norm is the L2
// norm (floating types only). An axis may be negative (-1 = last); one out of range, an empty
// max/min/argmax/mean, or norm of an integer array throws tandem::Error at the call.
#pragma once

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

NDArray sum(const NDArray& x);
NDArray mean(const NDArray& x);
NDArray max(const NDArray& x);
NDArray min(const NDArray& x);
NDArray argmax(const NDArray& x);
NDArray norm(const NDArray& x);

NDArray sum(const NDArray& x, int axis, bool keepdims = false);
NDArray mean(const NDArray& x, int axis, bool keepdims = false);
NDArray max(const NDArray& x, int axis, bool keepdims = false);
NDArray min(const NDArray& x, int axis, bool keepdims = false);
NDArray argmax(const NDArray& x, int axis, bool keepdims = false);
NDArray norm(const NDArray& x, int axis, bool keepdims = false);

}  // namespace tandem::nd
