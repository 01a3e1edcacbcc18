// Joining and splitting arrays.
//
//   auto c = nd::concat({a, b}, 0);     // a 2x3 and b 4x3 give 6x3
//   auto s = nd::stack({a, a}, 0);      // two 2x3 give 2x2x3 (a new axis 0)
//   auto parts = nd::split(c, 3, 0);    // 6x3 gives three 2x3 views
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

}  // namespace tandem::nd
