// 2-D convolution on a gpu(i), the gpu(i) form of tandem/ops/cpu/convolution.h: im2col and
// col2im kernels of tandem's own plus cuBLAS (strided-batched gemm over the samples of a chunk,
// chunks sized to bound the im2col scratch memory). col2im gathers (one thread per input
// element, no atomics), so results do not depend on scheduling. `stream` must be a gpu(i)
// compute stream; every view is dense, float32 or float64.
#pragma once

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/conv_geometry.h"

namespace tandem::ops::cuda {

// `bias` is optional: data == nullptr for none.
void conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias, const ArrayView& y,
            const Conv2dGeometry& g, tandem::Stream& stream);
void conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                          const Conv2dGeometry& g, tandem::Stream& stream);
void conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                            const Conv2dGeometry& g, tandem::Stream& stream);

}  // namespace tandem::ops::cuda
