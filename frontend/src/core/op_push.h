// Queuing the kernels of reductions, dot and concat (element-wise ones: elementwise.h): each
// is one op on any device, which takes its kernel from the table of the device it runs on
// (kernels.h). Checks and the result's allocation are the caller's.
#pragma once

#include <utility>
#include <vector>

#include "core/lazy_view.h"
#include "tandem/nd/ndarray.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::nd::detail {

// out (shape 1) = op over every element of x.
void push_reduce_all(ops::ReduceOp op, const NDArray& x, const NDArray& out);
// out = op over `axis` of x; out is dense, with or without the reduced axis kept as a 1.
void push_reduce_axis(ops::ReduceOp op, const NDArray& x, int axis, const NDArray& out);
// c = a . b (or c += a . b when `accumulate`), with the operands' lazy views already shaped
// as matrices.
void push_dot(const NDArray& a, const NDArray& b, const NDArray& out, const LazyView& va,
              const LazyView& vb, const LazyView& vc, bool accumulate = false);
// Copies each (from, to) pair, in one op that reads `reads` and writes out.
void push_copies(std::vector<std::pair<LazyView, LazyView>> copies, VarList reads,
                 const NDArray& out, const char* op);

}  // namespace tandem::nd::detail
