// The element-wise ops by kind, as the public functions run them (checks, push,
// autograd and trace hooks): what an imported graph calls for a node named after an op kind.
#pragma once

#include "tandem/nd/ndarray.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::nd::detail {

// elementwise.cc
NDArray unary_op(ops::UnaryOp op, const NDArray& x);
NDArray binary_op(ops::BinaryOp op, const NDArray& a, const NDArray& b);
// op(a, scalar), or op(scalar, a) when scalar_first.
NDArray binary_scalar_op(ops::BinaryOp op, const NDArray& a, double scalar, bool scalar_first);

}  // namespace tandem::nd::detail
