// 2-D max and average pooling on NCHW arrays, global average pooling, and their gradients.
//
//   auto x = nd::random::normal({64, 16, 28, 28});
//   auto m = nd::max_pool2d(x, {.kernel = 2});                        // stride = kernel: 14x14
//   auto a = nd::avg_pool2d(x, {.kernel = 3, .stride = 1, .padding = 1});   // 28x28
//   auto g = nd::global_avg_pool2d(x);                                // 64x16x1x1
//
// The output is (N, C, OH, OW) with OH = (H + 2 * padding.h - kernel.h) / stride.h + 1 (floor),
// same for OW. padding <= kernel / 2, so every window holds at least one input element.
// Max pooling never picks padding; it takes the first maximum of a window in row-major order
// (a NaN counts as the maximum), and its gradient goes to that element only.
// Average pooling with count_include_pad = true (the default, as in MXNet and PyTorch) divides
// every window's sum by kernel.h * kernel.w, counting padding as zeros; with false, by the
// number of input elements inside the window.
//
// float32 and float64, on cpu, sim(i) and cuda(i); errors at the call name the op, the option
// and the shape.
#pragma once

#include "tandem/nd/ndarray.h"
#include "tandem/nd/size2d.h"

namespace tandem::nd {

struct Pool2dOptions {
  Size2d kernel{};                // required, >= 1
  Size2d stride{0};               // >= 1; 0 (the default): the kernel size along that axis
  Size2d padding{0};              // 0 <= padding <= kernel / 2
  bool count_include_pad = true;  // average pooling only
};

NDArray max_pool2d(const NDArray& x, const Pool2dOptions& options);
NDArray avg_pool2d(const NDArray& x, const Pool2dOptions& options);
// The mean of each (sample, channel) plane: shape (N, C, 1, 1).
NDArray global_avg_pool2d(const NDArray& x);

// The output shape pooling gives for this input shape and options (checked as the ops do).
Shape pool2d_output_shape(const Shape& x, const Pool2dOptions& options);

// --- gradients: grad_out = dL/dy; each returns dL/dx ------------------------------------------
// They are the rules autograd uses for the forward ops above; they are not recorded themselves
// (no second derivatives).
// Needs the forward input x to find each window's maximum again.
NDArray max_pool2d_backward(const NDArray& grad_out, const NDArray& x,
                            const Pool2dOptions& options);
NDArray avg_pool2d_backward(const NDArray& grad_out, const Shape& input_shape,
                            const Pool2dOptions& options);
NDArray global_avg_pool2d_backward(const NDArray& grad_out, const Shape& input_shape);

}  // namespace tandem::nd
