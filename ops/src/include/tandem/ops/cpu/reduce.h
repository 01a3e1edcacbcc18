// Reductions on the CPU: sum, mean, max, min, argmax and the L2 norm, over a whole array or
// along one axis.
//
// Sums accumulate in double (floating types) or int64 (integers, wrapping around) and are
// converted to the output's dtype at the end. max/min propagate NaN; argmax returns the first
// index of the largest value (a NaN counts as largest) as int64. Results are the same bits on
// any number of threads: work is split in fixed blocks combined in order, and along an axis every
// output element adds its inputs in axis order.
//
// The front end rejects empty max/min/argmax/mean reductions before pushing the op.
#pragma once

#include "tandem/ops/array_view.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::ops::cpu {

// `out` has one element; it is int64 for argmax (the row-major index), else in's dtype.
void reduce_all(ReduceOp op, const ArrayView& in, const ArrayView& out);

// out.shape == in.shape.without_axis(axis); int64 for argmax (the index along the axis).
void reduce_axis(ReduceOp op, const ArrayView& in, int axis, const ArrayView& out);

}  // namespace tandem::ops::cpu
