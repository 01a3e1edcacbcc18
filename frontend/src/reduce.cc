// Reductions: check the axis and the element count at the call, then one queued kernel.
#include "tandem/nd/reduce.h"

#include <string>

#include "access.h"
#include "autograd/record.h"
#include "checks.h"
#include "device_kernel.h"
#include "lazy_view.h"
#include "tandem/errors.h"
#include "tandem/ops/cpu/reduce.h"
#include "tandem/ops/cuda/reduce.h"

namespace tandem::nd {

using ops::ReduceOp;

namespace {

DType result_dtype(ReduceOp op, DType input) {
  return op == ReduceOp::argmax ? DType::int64 : input;
}

void check_reducible(ReduceOp op, const NDArray& x, std::int64_t count) {
  const char* name = ops::op_name(op);
  if (ops::needs_floating(op)) detail::check_floating(name, x.dtype());
  const bool needs_elements = op != ReduceOp::sum && op != ReduceOp::norm;
  if (needs_elements && count == 0) {
    throw Error(std::string("tandem: ") + name + ": cannot reduce zero elements (shape " +
                x.shape().to_string() + ")");
  }
}

NDArray reduce_all(ReduceOp op, const NDArray& x) {
  const char* name = ops::op_name(op);
  detail::check_defined(name, x);
  check_reducible(op, x, x.size());
  // Like MXNet, a whole-array reduction has shape 1.
  NDArray out =
      detail::allocate_array(x.engine(), Shape{1}, result_dtype(op, x.dtype()), x.device(), name);
  const detail::LazyView in = detail::lazy_view(x);
  const detail::DenseRef result = detail::dense_ref(out);
  const DType dtype = out.dtype();
  if (out.device().is_accelerator()) {
    const WorkCost cost = detail::elementwise_cost(x.size(), x.dtype(), 1);
    out.engine().push(
        [op, in, result, dtype, cost](RunContext& ctx) {
          const ops::ArrayView vi = in.resolve();
          const ops::ArrayView vo = ops::contiguous_view(result.resolve(), dtype, Shape{1});
          detail::enqueue_kernel(
              ctx, cost, [op, vi, vo] { ops::cpu::reduce_all(op, vi, vo); },
              [&](Stream& stream) { ops::cuda::reduce_all(op, vi, vo, stream); });
        },
        out.device(), {x.var()}, {out.var()}, {.name = name});
  } else {
    out.engine().push(
        [op, in, result, dtype] {
          ops::cpu::reduce_all(op, in.resolve(),
                               ops::contiguous_view(result.resolve(), dtype, Shape{1}));
        },
        out.device(), {x.var()}, {out.var()}, {.name = name});
  }
  if (autograd::is_recording()) autograd::detail::record_reduce_all(op, x, out);
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
                                       result_dtype(op, x.dtype()), x.device(), name);
  const detail::LazyView in = detail::lazy_view(x);
  // The kernel writes the dense result as the reduced shape; keepdims only adds a 1.
  detail::LazyView result = detail::lazy_view(out);
  result.layout = ops::contiguous_view(nullptr, out.dtype(), reduced);
  if (out.device().is_accelerator()) {
    const WorkCost cost = detail::elementwise_cost(x.size(), x.dtype(), 1);
    out.engine().push(
        [op, in, axis, result, cost](RunContext& ctx) {
          const ops::ArrayView vi = in.resolve(), vo = result.resolve();
          detail::enqueue_kernel(
              ctx, cost, [op, vi, axis, vo] { ops::cpu::reduce_axis(op, vi, axis, vo); },
              [&](Stream& stream) { ops::cuda::reduce_axis(op, vi, axis, vo, stream); });
        },
        out.device(), {x.var()}, {out.var()}, {.name = name});
  } else {
    out.engine().push(
        [op, in, axis, result] { ops::cpu::reduce_axis(op, in.resolve(), axis, result.resolve()); },
        out.device(), {x.var()}, {out.var()}, {.name = name});
  }
  if (autograd::is_recording()) autograd::detail::record_reduce_axis(op, x, axis, out);
  return out;
}

}  // namespace

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

}  // namespace tandem::nd
