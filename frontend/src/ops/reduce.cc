// Reductions: check the axis and the element count at the call, then one queued kernel.
#include "tandem/nd/reduce.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "core/op_dispatch.h"
#include "core/op_push.h"
#include "tandem/errors.h"

namespace tandem::nd {

using ops::ReduceOp;

namespace {

void check_reducible(ReduceOp op, const NDArray& x, std::int64_t count) {
  const char* name = ops::op_name(op);
  detail::check_computable(name, x.dtype());
  if (ops::needs_floating(op)) detail::check_floating(name, x.dtype());
  if (!ops::reduces_empty(op) && count == 0) {
    throw Error(std::string("tandem: ") + name + ": cannot reduce zero elements (shape " +
                x.shape().to_string() + ")");
  }
}

NDArray reduce_all(ReduceOp op, const NDArray& x) {
  const char* name = ops::op_name(op);
  detail::check_defined(name, x);
  check_reducible(op, x, x.size());
  // Like MXNet, a whole-array reduction has shape 1.
  NDArray out = detail::allocate_array(x.engine(), Shape{1}, ops::result_dtype(op, x.dtype()),
                                       x.device(), name);
  detail::push_reduce_all(op, x, out);
  if (detail::ops_observed())
    detail::report_op(detail::OpCall::reduce(op, x, std::nullopt, false, out));
  return out;
}

NDArray reduce_axis(ReduceOp op, const NDArray& x, int axis, bool keepdims) {
  const char* name = ops::op_name(op);
  detail::check_defined(name, x);
  axis = ops::normalize_axis(axis, x.shape(), name);
  check_reducible(op, x, x.shape()[axis]);
  const Shape reduced = x.shape().without_axis(axis);
  Shape kept = x.shape();
  kept[axis] = 1;
  NDArray out = detail::allocate_array(x.engine(), keepdims ? kept : reduced,
                                       ops::result_dtype(op, x.dtype()), x.device(), name);
  detail::push_reduce_axis(op, x, axis, out);
  if (detail::ops_observed()) detail::report_op(detail::OpCall::reduce(op, x, axis, keepdims, out));
  return out;
}

}  // namespace

NDArray detail::reduce_all_op(ReduceOp op, const NDArray& x) {
  return reduce_all(op, x);
}
NDArray detail::reduce_axis_op(ReduceOp op, const NDArray& x, int axis, bool keepdims) {
  return reduce_axis(op, x, axis, keepdims);
}

NDArray sum(const NDArray& x) {
  return reduce_all(ReduceOp::sum, x);
}
NDArray mean(const NDArray& x) {
  return reduce_all(ReduceOp::mean, x);
}
NDArray max(const NDArray& x) {
  return reduce_all(ReduceOp::max, x);
}
NDArray min(const NDArray& x) {
  return reduce_all(ReduceOp::min, x);
}
NDArray argmax(const NDArray& x) {
  return reduce_all(ReduceOp::argmax, x);
}
NDArray norm(const NDArray& x) {
  return reduce_all(ReduceOp::norm, x);
}

NDArray sum(const NDArray& x, int axis, bool keepdims) {
  return reduce_axis(ReduceOp::sum, x, axis, keepdims);
}
NDArray mean(const NDArray& x, int axis, bool keepdims) {
  return reduce_axis(ReduceOp::mean, x, axis, keepdims);
}
NDArray max(const NDArray& x, int axis, bool keepdims) {
  return reduce_axis(ReduceOp::max, x, axis, keepdims);
}
NDArray min(const NDArray& x, int axis, bool keepdims) {
  return reduce_axis(ReduceOp::min, x, axis, keepdims);
}
NDArray argmax(const NDArray& x, int axis, bool keepdims) {
  return reduce_axis(ReduceOp::argmax, x, axis, keepdims);
}
NDArray norm(const NDArray& x, int axis, bool keepdims) {
  return reduce_axis(ReduceOp::norm, x, axis, keepdims);
}

NDArray NDArray::sum() const {
  return nd::sum(*this);
}
NDArray NDArray::sum(int axis, bool keepdims) const {
  return nd::sum(*this, axis, keepdims);
}
NDArray NDArray::mean() const {
  return nd::mean(*this);
}
NDArray NDArray::mean(int axis, bool keepdims) const {
  return nd::mean(*this, axis, keepdims);
}
NDArray NDArray::max() const {
  return nd::max(*this);
}
NDArray NDArray::min() const {
  return nd::min(*this);
}
NDArray NDArray::argmax() const {
  return nd::argmax(*this);
}
NDArray NDArray::norm() const {
  return nd::norm(*this);
}

namespace detail {
// No op of this file has a record yet (core/op_definition.h).
TANDEM_OP_DEFINITIONS(reduce)
}  // namespace detail

}  // namespace tandem::nd
