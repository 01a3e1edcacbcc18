// Joining, splitting and gathering arrays.
//
//   auto c = nd::concat({a, b}, 0);     // a 2x3 and b 4x3 give 6x3
//   auto s = nd::stack({a, a}, 0);      // two 2x3 give 2x2x3 (a new axis 0)
//   auto parts = nd::split(c, 3, 0);    // 6x3 gives three 2x3 views
//   auto rows = nd::take(c, idx, 0);    // int64 idx of shape 4 gives the 4x3 rows idx of c
//
// All inputs share device and dtype; concat's share every dimension but `axis`, stack's their
// whole shape (tandem::Error otherwise, naming the shapes). Each is differentiable and can be
// exported.
#pragma once

#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

NDArray concat(const std::vector<NDArray>& arrays, int axis = 0);

// The arrays, all of one shape, joined along a new axis `axis` of the result (in
// [-(ndim + 1), ndim]; negative counts from the end).
NDArray stack(const std::vector<NDArray>& arrays, int axis = 0);

// `sections` equal parts of x along `axis`, in order: views of x (no copy; writing into one
// writes x). `sections` must divide the axis's size.
std::vector<NDArray> split(const NDArray& x, int sections, int axis = 0);

// The entries of x at `indices` along `axis` (a gather; numpy.take, torch.index_select): the
// result has shape x.shape[:axis] + indices.shape + x.shape[axis+1:], with
// result[..., j..., ...] = x[..., indices[j...], ...]. `indices` is an int32 or int64 array on
// x's device, each in [-n, n) for n = x.shape[axis] (negative counts from the end); `axis` may be
// negative. An index out of range is a tandem::Error naming it, the axis and its size, raised at
// the call's sync point (the indices are read when the op runs). Differentiable in x: the
// gradient adds each output gradient back into the entry it came from (repeated indices add up).
// Can be exported.
NDArray take(const NDArray& x, const NDArray& indices, int axis = 0);

}  // namespace tandem::nd
