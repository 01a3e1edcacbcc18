// Copy-like CUDA kernels: copy with dtype conversion, fill, arange, the gpu(i) forms of
// tandem/ops/cpu/copy.h with the same contract and results. Each call enqueues its kernel on
// `stream` (a gpu(i) stream; the device is made current for the launch) and returns at once;
// views point to that device's memory.
//
//   engine.push([=](tandem::RunContext& ctx) {
//     tandem::ops::cuda::fill(out, 1.0, *ctx.stream());
//   }, tandem::cuda(0), {}, {out_var}, {.name = "ones"});
//
// Launch failures throw tandem::Error naming the kernel and the device.
#pragma once

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops::cuda {

void copy(const ArrayView& in, const ArrayView& out, tandem::Stream& stream);
void fill(const ArrayView& out, double value, tandem::Stream& stream);
// out[i] = start + i * step, for the row-major index i of each element of `out`.
void arange(const ArrayView& out, double start, double step, tandem::Stream& stream);
void where(const ArrayView& condition, const ArrayView& a, const ArrayView& b, const ArrayView& out,
           tandem::Stream& stream);

}  // namespace tandem::ops::cuda
