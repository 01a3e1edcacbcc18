// 2-D convolution (cross-correlation, as in every deep-learning framework) on NCHW arrays with
// OIHW weights, and the gradients the autograd calls.
//
//   auto x = nd::random::normal({64, 3, 28, 28});             // N, C, H, W
//   auto w = nd::random::normal({16, 3, 3, 3}) * 0.1;        // out, in / groups, kh, kw
//   auto b = nd::zeros({16});
//   auto y = nd::conv2d(x, w, b, {.stride = 2, .padding = 1});   // 64x16x14x14
//   auto z = nd::conv2d(x, w, {.dilation = 2});                   // no bias: 64x16x24x24
//
// Shapes: x is (N, C, H, W); weight is (O, C / groups, KH, KW); bias (optional) is (O); the
// output is (N, O, OH, OW) with
//   OH = (H + 2 * padding.h - dilation.h * (KH - 1) - 1) / stride.h + 1   (floor), same for OW.
// With groups = g, the channels split into g groups: output channels [i O/g, (i+1) O/g) see
// input channels [i C/g, (i+1) C/g) only. C and O must both be multiples of g.
//
// float32 and float64, on cpu (im2col + OpenBLAS, parallel over the batch), sim(i) and
// cuda(i) (im2col/col2im kernels + cuBLAS). Inputs share dtype and device. Every mistake the
// call can see (a shape, an option, a dtype, two devices) throws tandem::Error at the call,
// naming the op, the parameter and the shapes.
#pragma once

#include "tandem/nd/ndarray.h"
#include "tandem/nd/size2d.h"

namespace tandem::nd {

struct Conv2dOptions {
  Size2d stride{1};    // >= 1
  Size2d padding{0};   // >= 0: zeros around the input
  Size2d dilation{1};  // >= 1: spacing between kernel taps
  std::int64_t groups = 1;
};

// `bias` may be a null NDArray: no bias.
NDArray conv2d(const NDArray& x, const NDArray& weight, const NDArray& bias,
               const Conv2dOptions& options = {});
NDArray conv2d(const NDArray& x, const NDArray& weight, const Conv2dOptions& options = {});

// The output shape conv2d gives for these shapes and options (checks them as conv2d does).
Shape conv2d_output_shape(const Shape& x, const Shape& weight, const Conv2dOptions& options = {});

// --- gradients: y = conv2d(x, weight, bias, options), grad_out = dL/dy ------------------------
// They are the rules autograd uses for the forward ops above; they are not recorded themselves
// (no second derivatives).
// dL/dx, of shape `input_shape` (x's shape: the output shape alone does not determine it).
NDArray conv2d_backward_data(const NDArray& grad_out, const NDArray& weight,
                             const Shape& input_shape, const Conv2dOptions& options = {});
// dL/dweight, of shape `weight_shape`.
NDArray conv2d_backward_weight(const NDArray& grad_out, const NDArray& x, const Shape& weight_shape,
                               const Conv2dOptions& options = {});
// dL/dbias: grad_out summed over N, H and W, shape (O); one op (a strided grad_out is made dense
// first). Under autograd, a convolution whose weight and bias both need gradients forms the two
// in one op (conv2d_backward_weight_bias in the profiler).
NDArray conv2d_backward_bias(const NDArray& grad_out);

}  // namespace tandem::nd
