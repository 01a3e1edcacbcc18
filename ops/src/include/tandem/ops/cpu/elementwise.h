// Element-wise CPU kernels: out = op(in), out = op(a, b), out = op(a, scalar).
//
// Call them from inside an engine op. Operands are ArrayViews of one dtype; `a`, `b` and `in`
// must already have out's shape (use broadcast_view for NumPy broadcasting, which gives stride
// 0 to stretched dimensions). `out` may be any non-overlapping strided view, or exactly the same
// view as an input (in place). Big arrays run in parallel in the caller's oneTBB arena.
//
// Throws tandem::Error for an integer division by zero (the engine then poisons the op's
// outputs and reports the error at the next sync point).
#pragma once

#include <cstdint>

#include "tandem/ops/array_view.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::ops::cpu {

void unary(UnaryOp op, const ArrayView& in, const ArrayView& out);
void binary(BinaryOp op, const ArrayView& a, const ArrayView& b, const ArrayView& out);
// op(a, scalar), or op(scalar, a) when `scalar_first`. The scalar is converted to the dtype.
void binary_scalar(BinaryOp op, const ArrayView& a, double scalar, bool scalar_first,
                   const ArrayView& out);

// Dense 1-D forms of the same kernels (the front end's fast path for gap-free arrays of one
// shape): `n` elements of `dtype` from each pointer.
void unary_dense(UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n);
void binary_dense(BinaryOp op, DType dtype, const void* a, const void* b, void* out,
                  std::int64_t n);
void binary_scalar_dense(BinaryOp op, DType dtype, const void* a, double scalar, bool scalar_first,
                         void* out, std::int64_t n);

}  // namespace tandem::ops::cpu
