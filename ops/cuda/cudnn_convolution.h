// Convolution through cuDNN, when its library loads: the path convolution.cu takes first on a
// gpu(i), before its own im2col + cuBLAS kernels.
//
// libcudnn.so.9 is loaded with dlopen on first use (Debian has no cuDNN package; GPU machines
// often have it in their CUDA installation or their Python environment), so nothing links
// against it and a machine without it runs the im2col kernels. Each entry point returns false,
// having done nothing, when the call should take the im2col path instead: cuDNN not loadable,
// turned off (AcceleratorConfig::use_cudnn, TANDEM_CUDNN=0), a size past cuDNN's int
// descriptors, no algorithm whose workspace fits, or the first call on a stream made while that
// stream is being captured into a graph (creating a cuDNN handle is not allowed then).
//
// Algorithms come from cuDNN's heuristics (the *_v7 queries, as PyTorch does without
// cudnn.benchmark), cached per device, geometry, dtype and math mode; deterministic algorithms
// are preferred, so a step repeats bit for bit. float32 stays strict fp32 (CUDNN_FMA_MATH)
// unless the stream's accelerator allows TF32 (AcceleratorConfig::allow_tf32). Workspaces come
// from the stream's scratch arena, so a steady loop allocates nothing.
#pragma once

#include <string>

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/conv_geometry.h"

namespace tandem::ops::cuda {

bool cudnn_conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias,
                  const ArrayView& y, const Conv2dGeometry& g, tandem::Stream& stream);
bool cudnn_conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                                const Conv2dGeometry& g, tandem::Stream& stream);
bool cudnn_conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                                  const Conv2dGeometry& g, tandem::Stream& stream);

}  // namespace tandem::ops::cuda
