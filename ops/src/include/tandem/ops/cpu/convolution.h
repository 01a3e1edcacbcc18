// 2-D convolution on the CPU (NCHW input, OIHW weights; sizes in tandem/ops/conv_geometry.h):
// im2col + gemm per sample and group, col2im for the input gradient.
//
// Samples are split into fixed blocks (a function of the batch size only) that run as a
// parallel_for in the engine's TBB arena, each block with its own im2col buffer and one
// single-threaded BLAS call per (sample, group). The weight gradient sums its blocks' partial
// sums in block order, so results are the same bits on any number of threads.
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
