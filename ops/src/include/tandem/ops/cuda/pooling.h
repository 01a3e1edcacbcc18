// 2-D max and average pooling on a gpu(i), the gpu(i) form of tandem/ops/cpu/pooling.h (same
// window rules, same first maximum). Forward: one thread per output element; backward: one
// thread per input element gathering from the windows that hold it (no atomics). `stream` must
// be a gpu(i) compute stream; every view is dense, float32 or float64.
#pragma once

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/conv_geometry.h"

namespace tandem::ops::cuda {

void max_pool2d(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g,
                tandem::Stream& stream);
void avg_pool2d(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g,
                tandem::Stream& stream);
void max_pool2d_backward(const ArrayView& x, const ArrayView& dy, const ArrayView& dx,
                         const Pool2dGeometry& g, tandem::Stream& stream);
void avg_pool2d_backward(const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g,
                         tandem::Stream& stream);

}  // namespace tandem::ops::cuda
