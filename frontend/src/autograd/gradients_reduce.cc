// The gradient rule of dot, and the broadcasting helper the rules share (the reductions' rules
// are in their records, frontend/src/ops/reduce.cc).
#include <string>

#include "autograd/record.h"
#include "autograd/tape.h"
#include "core/access.h"
#include "ops/product_into.h"
#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/linalg.h"
#include "tandem/nd/reduce.h"

namespace tandem::autograd::detail {

using nd::NDArray;
using nd::Shape;

NDArray sum_to_shape(const NDArray& gradient, const Shape& shape) {
  if (gradient.shape() == shape) return gradient;
  NDArray reduced = gradient;
  while (reduced.ndim() > shape.ndim()) reduced = nd::sum(reduced, 0);
  for (int i = 0; i < shape.ndim(); ++i)
    if (shape[i] == 1 && reduced.shape()[i] != 1) reduced = nd::sum(reduced, i, true);
  if (!(reduced.shape() == shape)) reduced = reduced.reshape(shape);
  return reduced;
}

namespace {

// x itself when it has that shape already (reshape would copy a strided x even then).
NDArray with_shape(const NDArray& x, const Shape& shape) {
  return x.shape() == shape ? x : x.reshape(shape);
}

}  // namespace

void record_dot(const NDArray& a, const NDArray& b, NDArray& out) {
  if (!ops::is_floating(out.dtype())) return;
  const bool need_a = needs_grad(a), need_b = needs_grad(b);
  if (!need_a && !need_b) return;
  Saver save;
  const NDArray sa = need_b ? save(a) : NDArray();
  const NDArray sb = need_a ? save(b) : NDArray();
  const Shape shape_a = a.shape(), shape_b = b.shape();
  // ga = g . b^T and gb = a^T . g, every case as matrices: a (m x k), b (k x n), g (m x n). A
  // 2-D input's gradient goes straight into its destination when backward offers one (a gemm
  // writing or accumulating into the leaf's gradient buffer, product_into.h).
  auto rule = [need_a, need_b, sa, sb, shape_a, shape_b](
                  const std::vector<NDArray>& grads,
                  std::vector<GradientDestination>& destinations) {
    const std::int64_t k = shape_a[shape_a.ndim() - 1];
    const std::int64_t m = shape_a.ndim() == 2 ? shape_a[0] : 1;
    const std::int64_t n = shape_b.ndim() == 2 ? shape_b[1] : 1;
    const NDArray g = with_shape(grads[0], {m, n});
    const auto into = [&](std::size_t input, const Shape& shape, const NDArray& left,
                          const NDArray& right) {
      if (input >= destinations.size() || shape.ndim() != 2) return false;
      GradientDestination& destination = destinations[input];
      if (!destination.buffer.defined()) return false;
      destination.written =
          nd::detail::push_product_into(left, right, destination.buffer, destination.add);
      return destination.written;
    };
    NDArray ga, gb;
    if (need_a) {
      const NDArray b_t = with_shape(sb, {k, n}).T();
      if (!into(0, shape_a, g, b_t)) ga = with_shape(nd::dot(g, b_t), shape_a);
    }
    if (need_b) {
      const NDArray a_t = with_shape(sa, {m, k}).T();
      if (!into(1, shape_b, a_t, g)) gb = with_shape(nd::dot(a_t, g), shape_b);
    }
    return std::vector<NDArray>{ga, gb};
  };
  record_node("dot", {a, b}, {&out}, save.take(), [rule](const std::vector<NDArray>& grads) {
    std::vector<GradientDestination> none;
    return rule(grads, none);
  });
  nd::detail::NDArrayAccess::grad_node(out)->backward_into = rule;
}

}  // namespace tandem::autograd::detail
