// Queuing element-wise kernels on existing arrays: the pieces the element-wise functions, the
// in-place operators and assignment share.
#pragma once

#include "tandem/nd/ndarray.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::nd::detail {

// Queue out = op(a, b) (a, b broadcast to out's shape), out = op(a, scalar) / op(scalar, a), and
// out = op(in). Checks were made by the caller; `out` is a fresh array or the very same view as
// an input (in-place operators), so the op reads out's var whenever it writes only part of it.
//
// push_copy and push_fill write any view: a write that leaves part of the storage as it was
// also reads the storage's var (WriteReads, access.h), so it keeps the poison of the rest.
void push_binary(ops::BinaryOp op, const NDArray& a, const NDArray& b, const NDArray& out);
void push_binary_scalar(ops::BinaryOp op, const NDArray& a, double scalar, bool scalar_first,
                        const NDArray& out);
void push_unary(ops::UnaryOp op, const NDArray& in, const NDArray& out);
// Queue out = in (in broadcast to out's shape; dtypes may differ: values are converted).
void push_copy(const NDArray& in, const NDArray& out, const char* op);
// Queue out[...] = value (converted to out's dtype).
void push_fill(const NDArray& out, double value, const char* op);

}  // namespace tandem::nd::detail
