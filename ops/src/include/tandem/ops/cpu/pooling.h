// 2-D max and average pooling on the CPU (NCHW; sizes in tandem/ops/conv_geometry.h), forward
// and backward, parallel over the (sample, channel) planes in fixed blocks.
//
// Max pooling takes the first maximum of a window in row-major order (a NaN counts as the
// maximum); its backward recomputes that position from x and adds dy there. Padding never wins
// a max. Every view is dense; float32 and float64 only.
#pragma once

#include "tandem/ops/array_view.h"
#include "tandem/ops/conv_geometry.h"

namespace tandem::ops::cpu {

void max_pool2d(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g);
void avg_pool2d(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g);

// dx (shape of x) from dy (shape of y).
void max_pool2d_backward(const ArrayView& x, const ArrayView& dy, const ArrayView& dx,
                         const Pool2dGeometry& g);
void avg_pool2d_backward(const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g);

}  // namespace tandem::ops::cpu
