// Element-wise CUDA kernels: the gpu(i) forms of tandem/ops/cpu/elementwise.h, running the same
// functors (tandem/ops/functors.h) in a grid-stride loop over strided views (0 strides for
// broadcast dimensions). Same contract as the CPU forms, enqueued on `stream`.
//
// An integer division by a zero element fails the op with the CPU's error text, like every
// other device: the kernel raises a device-side flag, which a stream host item after the kernel
// reads (copied to pinned memory in stream order) and turns into the error, so no op waits for
// the device. A zero scalar divisor is reported at launch.
#pragma once

#include <cstdint>

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::ops::cuda {

void unary(UnaryOp op, const ArrayView& in, const ArrayView& out, tandem::Stream& stream);
void binary(BinaryOp op, const ArrayView& a, const ArrayView& b, const ArrayView& out,
            tandem::Stream& stream);
void binary_scalar(BinaryOp op, const ArrayView& a, double scalar, bool scalar_first,
                   const ArrayView& out, tandem::Stream& stream);

void unary_dense(UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n,
                 tandem::Stream& stream);
void binary_dense(BinaryOp op, DType dtype, const void* a, const void* b, void* out, std::int64_t n,
                  tandem::Stream& stream);
void binary_scalar_dense(BinaryOp op, DType dtype, const void* a, double scalar, bool scalar_first,
                         void* out, std::int64_t n, tandem::Stream& stream);

}  // namespace tandem::ops::cuda
