// 2-D convolution on the CPU (NCHW input, OIHW weights; sizes in tandem/ops/conv_geometry.h):
// im2col + gemm, col2im for the input gradient, over chunks of samples at once.
//
// The samples of a chunk sit side by side in the gemm's columns; the chunks run side by side in
// the engine's TBB arena (one single-threaded BLAS call per chunk and group), or in order with
// each gemm cut into output tiles run side by side (ops/src/cpu/convolution.cc says which, and
// why). The weight gradient's tiles are tiles of dW itself, summed over the chunks in order;
// chunks, modes and tiles depend on the geometry only, so results are the same bits on any
// number of threads.
//
// Every view is dense; float32 and float64 only (the front end checks both).
#pragma once

#include "tandem/ops/array_view.h"
#include "tandem/ops/conv_geometry.h"

namespace tandem::ops::cpu {

// y = conv(x, weight) + bias. `bias` (out_channels) is optional: data == nullptr for none.
void conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias, const ArrayView& y,
            const Conv2dGeometry& g);

// dx = the gradient of sum(conv(x, weight) * dy) with respect to x.
void conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                          const Conv2dGeometry& g);

// dweight = the gradient of sum(conv(x, weight) * dy) with respect to weight.
void conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                            const Conv2dGeometry& g);

}  // namespace tandem::ops::cpu
