// dot (its record, with the gradient rule that can write into a weight's gradient buffer) and
// transpose(x); the permuting transpose(x, axes) is a view of the core (core/views.cc).
#include "tandem/nd/linalg.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/invoke.h"
#include "core/lazy_view.h"
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

// x itself when it has that shape already (reshape would copy a strided x even then).
NDArray with_shape(const NDArray& x, const Shape& shape) {
  return x.shape() == shape ? x : x.reshape(shape);
}

// ga = g . b^T and gb = a^T . g, every case as matrices: a (m x k), b (k x n), g (m x n). It
// saves a only for b's gradient and b only for a's. A 2-D input's gradient goes straight into
// its destination when backward offers one (a gemm writing or accumulating into the leaf's
// gradient buffer, product_into.h): no extra op for a weight's gradient.
detail::OpGradient dot_gradient(const detail::OpCall& c) {
  const NDArray &a = c.input(0), &b = c.input(1);
  if (!ops::is_floating(c.out->dtype())) return {};
  const bool need_a = c.needs_gradient(0), need_b = c.needs_gradient(1);
  detail::OpGradient gradient;
  gradient.inputs = {a, b};
  gradient.saved = {need_b ? a : NDArray(), need_a ? b : NDArray()};
  gradient.rule_into = [need_a, need_b, shape_a = a.shape(), shape_b = b.shape()](
                           const std::vector<NDArray>& grads, const std::vector<NDArray>& saved,
                           std::vector<detail::GradientDestination>& destinations) {
    const std::int64_t k = shape_a[shape_a.ndim() - 1];
    const std::int64_t m = shape_a.ndim() == 2 ? shape_a[0] : 1;
    const std::int64_t n = shape_b.ndim() == 2 ? shape_b[1] : 1;
    const NDArray g = with_shape(grads[0], {m, n});
    const auto into = [&](std::size_t input, const Shape& shape, const NDArray& left,
                          const NDArray& right) {
      if (input >= destinations.size() || shape.ndim() != 2) return false;
      detail::GradientDestination& destination = destinations[input];
      if (!destination.buffer.defined()) return false;
      destination.written =
          detail::push_product_into(left, right, destination.buffer, destination.add);
      return destination.written;
    };
    NDArray ga, gb;
    if (need_a) {
      const NDArray b_t = with_shape(saved[1], {k, n}).T();
      if (!into(0, shape_a, g, b_t)) ga = with_shape(dot(g, b_t), shape_a);
    }
    if (need_b) {
      const NDArray a_t = with_shape(saved[0], {m, k}).T();
      if (!into(1, shape_b, a_t, g)) gb = with_shape(dot(a_t, g), shape_b);
    }
    return std::vector<NDArray>{ga, gb};
  };
  gradient.rule = [into = gradient.rule_into](const std::vector<NDArray>& grads,
                                              const std::vector<NDArray>& saved) {
    std::vector<detail::GradientDestination> none;
    return into(grads, saved, none);
  };
  return gradient;
}

std::vector<detail::OpExample> dot_examples() {
  const auto pair = [](const char* label, Shape a, Shape b) {
    return detail::OpExample{
        .label = label,
        .inputs =
            [a, b](Device d) {
              return std::vector<NDArray>{detail::example_array(a, d, 1, -1.0, 1.0),
                                          detail::example_array(b, d, 2, -1.0, 1.0)};
            },
        .run = [](const std::vector<NDArray>& in) { return dot(in[0], in[1]); },
        .differentiable = {0, 1}};
  };
  return {pair("matrix . matrix", {3, 4}, {4, 2}), pair("matrix . vector", {3, 4}, {4}),
          pair("vector . matrix", {4}, {4, 2}), pair("vector . vector", {4}, {4})};
}

const detail::OpDefinition kDot{
    .name = "dot",
    .num_inputs = 2,
    .import = [](const detail::OpAttrReader&,
                 const std::vector<NDArray>& in) { return dot(in[0], in[1]); },
    .gradient = dot_gradient,
    .examples = dot_examples};

}  // namespace

NDArray dot(const NDArray& a, const NDArray& b) {
  std::int64_t m = 1, n = 1;
  return detail::invoke(
      kDot, {&a, &b}, nullptr,
      [&] {
        Engine& engine = detail::check_same_place("dot", {&a, &b});
        detail::check_same_dtype("dot", a, b);
        if (a.ndim() < 1 || a.ndim() > 2 || b.ndim() < 1 || b.ndim() > 2) {
          throw Error("tandem: dot: takes 1-D or 2-D arrays, got shapes " + a.shape().to_string() +
                      " and " + b.shape().to_string());
        }
        const std::int64_t inner_a = a.shape()[a.ndim() - 1];
        const std::int64_t inner_b = b.shape()[0];
        if (inner_a != inner_b) {
          throw Error("tandem: dot: shapes " + a.shape().to_string() + " and " +
                      b.shape().to_string() + " are not aligned: " + std::to_string(inner_a) +
                      " (last dimension of the first) != " + std::to_string(inner_b) +
                      " (first dimension of the second)");
        }
        m = a.ndim() == 2 ? a.shape()[0] : 1;
        n = b.ndim() == 2 ? b.shape()[1] : 1;
        Shape shape;
        if (a.ndim() == 2) shape.push_back(m);
        if (b.ndim() == 2) shape.push_back(n);
        if (shape.ndim() == 0) shape.push_back(1);  // vector . vector: shape 1, like MXNet
        return detail::OpPlan{&engine, shape, a.dtype(), a.device()};
      },
      [&](detail::OpOutput& o) {
        detail::LazyView va = detail::lazy_view(a), vb = detail::lazy_view(b),
                         vc = detail::lazy_view(o.out);
        va.layout = as_matrix(va.layout, false);
        vb.layout = as_matrix(vb.layout, true);
        vc.layout = ops::contiguous_view(nullptr, o.out.dtype(), Shape{m, n});
        detail::push_dot(a, b, o.out, va, vb, vc);
      });
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

namespace detail {
TANDEM_OP_DEFINITIONS(linalg, &kDot)
}  // namespace detail

}  // namespace tandem::nd
