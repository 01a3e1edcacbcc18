// 2-D convolution on a gpu(i), the gpu(i) form of tandem/ops/cpu/convolution.h: through cuDNN
// when its library loads (ops/cuda/cudnn_convolution.h: loaded with dlopen, strict fp32 unless
// TF32 is allowed, deterministic algorithms preferred), else with im2col and
// col2im kernels of tandem's own plus cuBLAS (strided-batched gemm over the samples of a chunk,
// chunks sized to bound the im2col scratch memory). col2im gathers (one thread per input
// element, no atomics), so results do not depend on scheduling. `stream` must be a gpu(i)
// compute stream; every view is dense, float32 or float64.
#pragma once

#include <string>

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/conv_geometry.h"

namespace tandem::ops::cuda {

// Which implementation a call may use: cuDNN when it can (`automatic`, what the kernel table
// calls), or tandem's own im2col kernels whatever the machine has (tests compare the two and
// pin the im2col path's launches, which sim models).
enum class ConvPath { automatic, im2col };

// "libcudnn.so.9 9.19.0" when cuDNN is loaded (or loads now), else "unavailable: <why>".
std::string cudnn_library();

// `bias` is optional: data == nullptr for none.
void conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias, const ArrayView& y,
            const Conv2dGeometry& g, tandem::Stream& stream, ConvPath path);
void conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                          const Conv2dGeometry& g, tandem::Stream& stream, ConvPath path);
void conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                            const Conv2dGeometry& g, tandem::Stream& stream, ConvPath path);
// The same with ConvPath::automatic: the forms the rows of kernels.h declare.
void conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias, const ArrayView& y,
            const Conv2dGeometry& g, tandem::Stream& stream);
void conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                          const Conv2dGeometry& g, tandem::Stream& stream);
void conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                            const Conv2dGeometry& g, tandem::Stream& stream);

}  // namespace tandem::ops::cuda
