// The sizes a convolution or pooling kernel works with, worked out and checked once by the
// front end (tandem/nd/convolution.h, tandem/nd/pooling.h) and handed to the kernels of every
// backend as plain values.
//
// Layouts: input x is NCHW, dense; convolution weights are OIHW (out_channels, in_channels /
// groups, kernel_h, kernel_w), dense; outputs are N x out_channels x out_h x out_w, dense.
// Output sizes (floor division):
//   out = (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1
// Pooling is the same with dilation 1 and out_channels == channels.
#pragma once

#include <cstdint>

namespace tandem::ops {

struct Conv2dGeometry {
  std::int64_t batch = 0;
  std::int64_t in_channels = 0;
  std::int64_t in_h = 0, in_w = 0;
  std::int64_t out_channels = 0;
  std::int64_t kernel_h = 0, kernel_w = 0;
  std::int64_t out_h = 0, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;

  std::int64_t in_channels_per_group() const { return in_channels / groups; }
  std::int64_t out_channels_per_group() const { return out_channels / groups; }
  // Rows of one group's im2col matrix: one per (input channel of the group, kernel tap).
  std::int64_t col_rows() const { return in_channels_per_group() * kernel_h * kernel_w; }
  // Columns of the im2col matrix: one per output pixel.
  std::int64_t col_cols() const { return out_h * out_w; }
};

struct Pool2dGeometry {
  std::int64_t batch = 0;
  std::int64_t channels = 0;
  std::int64_t in_h = 0, in_w = 0;
  std::int64_t kernel_h = 0, kernel_w = 0;
  std::int64_t out_h = 0, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  // Average pooling: divide by kernel_h * kernel_w (padding counts as zeros) when true, by the
  // number of input elements inside the window when false. Max pooling ignores it.
  bool count_include_pad = true;
};

}  // namespace tandem::ops
