// dot and transpose.
#include "tandem/nd/linalg.h"

#include <string>

#include "access.h"
#include "autograd/record.h"
#include "checks.h"
#include "lazy_view.h"
#include "op_push.h"
#include "op_trace.h"
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
  if (autograd::is_recording()) autograd::detail::record_dot(a, b, out);
  if (auto* trace = detail::active_trace()) trace->dot(a, b, out);
  return out;
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
  if (autograd::is_recording()) autograd::detail::record_transpose(x, axes, out);
  if (auto* trace = detail::active_trace()) trace->transpose(x, axes, out);
  return out;
}

}  // namespace tandem::nd
