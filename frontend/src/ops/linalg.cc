// dot and transpose.
#include "tandem/nd/linalg.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/lazy_view.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "core/op_push.h"
#include "ops/product_into.h"
#include "tandem/errors.h"

namespace tandem::nd {

namespace {

// A 1-D view as a one-column (or one-row) matrix, for the 2-D kernel.
ops::ArrayView as_matrix(const ops::ArrayView& v, bool column) {
  if (v.ndim() == 2) return v;
  ops::ArrayView m = v;
  const std::int64_t n = v.shape[0];
  m.shape = column ? Shape{n, 1} : Shape{1, n};
  m.strides = column ? Strides{v.strides[0], 1} : Strides{n, v.strides[0]};
  return m;
}

// The transpose of a 2-D array as a view, without recording or tracing it (x.T() does both).
NDArray transposed_matrix(const NDArray& x) {
  using detail::NDArrayAccess;
  const Strides& s = x.strides();
  return NDArrayAccess::make(NDArrayAccess::storage(x), x.dtype(),
                             Shape{x.shape()[1], x.shape()[0]}, Strides{s[1], s[0]},
                             NDArrayAccess::offset(x));
}

}  // namespace

NDArray dot(const NDArray& a, const NDArray& b) {
  Engine& engine = detail::check_same_place("dot", {&a, &b});
  detail::check_same_dtype("dot", a, b);
  if (a.ndim() < 1 || a.ndim() > 2 || b.ndim() < 1 || b.ndim() > 2) {
    throw Error("tandem: dot: takes 1-D or 2-D arrays, got shapes " + a.shape().to_string() +
                " and " + b.shape().to_string());
  }
  const std::int64_t inner_a = a.shape()[a.ndim() - 1];
  const std::int64_t inner_b = b.shape()[0];
  if (inner_a != inner_b) {
    throw Error("tandem: dot: shapes " + a.shape().to_string() + " and " + b.shape().to_string() +
                " are not aligned: " + std::to_string(inner_a) +
                " (last dimension of the first) != " + std::to_string(inner_b) +
                " (first dimension of the second)");
  }
  const std::int64_t m = a.ndim() == 2 ? a.shape()[0] : 1;
  const std::int64_t n = b.ndim() == 2 ? b.shape()[1] : 1;
  Shape shape;
  if (a.ndim() == 2) shape.push_back(m);
  if (b.ndim() == 2) shape.push_back(n);
  if (shape.ndim() == 0) shape.push_back(1);  // vector . vector: shape 1, like MXNet
  NDArray out = detail::allocate_array(engine, shape, a.dtype(), a.device(), "dot");
  detail::LazyView va = detail::lazy_view(a), vb = detail::lazy_view(b),
                   vc = detail::lazy_view(out);
  va.layout = as_matrix(va.layout, false);
  vb.layout = as_matrix(vb.layout, true);
  vc.layout = ops::contiguous_view(nullptr, out.dtype(), Shape{m, n});
  detail::push_dot(a, b, out, va, vb, vc);
  if (detail::ops_observed()) {
    detail::OpCall call = detail::OpCall::of(detail::OpForm::dot, "dot", a, out);
    call.y = &b;
    detail::report_op(call);
  }
  return out;
}

bool detail::push_product_into(const NDArray& a, const NDArray& b, const NDArray& out,
                               bool accumulate) {
  if (!a.defined() || !b.defined() || !out.defined()) return false;
  if (a.ndim() != 2 || b.ndim() != 2 || out.ndim() != 2) return false;
  if (a.shape()[1] != b.shape()[0] || out.shape()[0] != a.shape()[0] ||
      out.shape()[1] != b.shape()[1]) {
    return false;
  }
  if (a.dtype() != out.dtype() || b.dtype() != out.dtype() || a.device() != out.device() ||
      b.device() != out.device() || &a.engine() != &out.engine() || &b.engine() != &out.engine()) {
    return false;
  }
  if (!out.is_contiguous()) {
    const NDArray out_t = transposed_matrix(out);
    if (!out_t.is_contiguous()) return false;
    return push_product_into(transposed_matrix(b), transposed_matrix(a), out_t, accumulate);
  }
  // The kernel reads a and b while writing out: they must not share its memory.
  if (NDArrayAccess::storage(out) == NDArrayAccess::storage(a) ||
      NDArrayAccess::storage(out) == NDArrayAccess::storage(b)) {
    return false;
  }
  LazyView va = lazy_view(a), vb = lazy_view(b), vc = lazy_view(out);
  push_dot(a, b, out, va, vb, vc, accumulate);
  return true;
}

NDArray transpose(const NDArray& x) {
  detail::check_defined("transpose", x);
  return x.T();
}

NDArray transpose(const NDArray& x, const std::vector<int>& axes) {
  detail::check_defined("transpose", x);
  const auto describe = [&] {
    std::string text;
    for (int axis : axes) text += (text.empty() ? "" : ", ") + std::to_string(axis);
    return "(" + text + ")";
  };
  if (static_cast<int>(axes.size()) != x.ndim()) {
    throw Error("tandem: transpose: axes " + describe() + " do not match the " +
                std::to_string(x.ndim()) + " dimensions of shape " + x.shape().to_string());
  }
  bool seen[ops::kMaxDims] = {};
  Shape shape;
  Strides strides{};
  for (int axis : axes) {
    const int a = ops::normalize_axis(axis, x.shape(), "transpose");
    if (seen[a]) throw Error("tandem: transpose: axes " + describe() + " repeat an axis");
    seen[a] = true;
    strides[static_cast<std::size_t>(shape.ndim())] = x.strides()[static_cast<std::size_t>(a)];
    shape.push_back(x.shape()[a]);
  }
  NDArray out = detail::NDArrayAccess::make(detail::NDArrayAccess::storage(x), x.dtype(), shape,
                                            strides, detail::NDArrayAccess::offset(x));
  if (detail::ops_observed()) {
    detail::OpCall call = detail::OpCall::of(detail::OpForm::transpose, "transpose", x, out);
    call.axes = &axes;
    detail::report_op(call);
  }
  return out;
}

namespace detail {
// No op of this file has a record yet (core/op_definition.h).
TANDEM_OP_DEFINITIONS(linalg)
}  // namespace detail

}  // namespace tandem::nd
