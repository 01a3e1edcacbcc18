// Reductions: check the axis and the element count at the call, then one queued kernel. Each
// row of TANDEM_REDUCE_OPS is one record (core/op_definition.h) with its gradient rule.
#include "tandem/nd/reduce.h"

#include <array>
#include <iterator>
#include <optional>
#include <span>
#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/invoke.h"
#include "core/op_definition.h"
#include "core/op_push.h"
#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"

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

struct ReduceAttrs {
  ReduceOp op;
  std::optional<int> axis;  // normalized; none: the whole array
  bool keepdims;
};

// `value` seen with `shape` (stride 0 along the axes it is broadcast along): a view, no op
// queued. The gradient of a sum or a mean is this view of the output's gradient, as a
// broadcast operand of an element-wise op is. Its readers take strided views (a kernel that
// needs a dense operand copies it first), and nothing writes into a gradient in place:
// autograd::grad hands a target a dense copy of such a view (autograd/backward.cc).
NDArray broadcast_to(const NDArray& value, const Shape& shape) {
  using detail::NDArrayAccess;
  const ops::ArrayView view = ops::broadcast_view(
      ops::ArrayView{nullptr, value.dtype(), value.shape(), value.strides()}, shape);
  return NDArrayAccess::make(NDArrayAccess::storage(value), value.dtype(), shape, view.strides,
                             NDArrayAccess::offset(value));
}

bool reads_input(ReduceOp op) {
  return op == ReduceOp::max || op == ReduceOp::min || op == ReduceOp::norm;
}

// The gradient of an input of `shape` given the output gradient g, both with the reduced axes
// kept (as 1), the input x and result y (kept dims; only for max, min and norm) and the count
// of elements reduced into each result. axis < 0: the whole array.
NDArray reduce_gradient(ReduceOp op, const NDArray& g, const Shape& shape, const NDArray& x,
                        const NDArray& y, std::int64_t count, int axis) {
  switch (op) {
    case ReduceOp::sum:
      return broadcast_to(g, shape);
    case ReduceOp::mean:
      return broadcast_to(g / static_cast<double>(count), shape);
    case ReduceOp::max:
    case ReduceOp::min: {
      // Split evenly between the elements equal to the extreme.
      const NDArray hits = x == y;
      const NDArray ties = axis < 0 ? nd::sum(hits) : nd::sum(hits, axis, true);
      return hits * (g / ties);
    }
    case ReduceOp::norm:
      // x / |x|; where |x| = 0, x is 0 too and so is the gradient (the denominator becomes 1).
      return x * (g / (y + (y == 0.0)));
    case ReduceOp::argmax:
      break;
  }
  return {};
}

// The reductions' rule (none for argmax, or for an integer input): it saves x and the result
// only for max, min and norm.
detail::OpGradient reduce_rule(const detail::OpCall& c) {
  const ReduceAttrs& attrs = detail::attrs_of<ReduceAttrs>(c);
  const NDArray& x = *c.inputs[0];
  if (attrs.op == ReduceOp::argmax || !ops::is_floating(x.dtype())) return {};
  const bool reads = reads_input(attrs.op);
  detail::OpGradient gradient;
  gradient.inputs = {x};
  gradient.saved = {reads ? x : NDArray(), reads ? *c.out : NDArray()};
  const Shape shape = x.shape();
  if (!attrs.axis) {
    gradient.rule = [op = attrs.op, shape, count = x.size()](const std::vector<NDArray>& g,
                                                             const std::vector<NDArray>& saved) {
      return std::vector<NDArray>{reduce_gradient(op, g[0], shape, saved[0], saved[1], count, -1)};
    };
    return gradient;
  }
  const int axis = *attrs.axis;
  Shape kept = shape;
  kept[axis] = 1;
  gradient.rule = [op = attrs.op, shape, kept, count = shape[axis], axis](
                      const std::vector<NDArray>& g, const std::vector<NDArray>& saved) {
    const NDArray g_kept = g[0].shape() == kept ? g[0] : g[0].reshape(kept);
    const NDArray y = saved[1].defined() ? saved[1].reshape(kept) : NDArray();
    return std::vector<NDArray>{reduce_gradient(op, g_kept, shape, saved[0], y, count, axis)};
  };
  return gradient;
}

void write_reduce_attrs(const detail::OpCall& c, detail::OpAttrWriter& out) {
  const ReduceAttrs& attrs = detail::attrs_of<ReduceAttrs>(c);
  if (!attrs.axis) return;  // the whole array: no attributes
  out.integer("axis", *attrs.axis);
  out.boolean("keepdims", attrs.keepdims);
}

NDArray reduce_all(ReduceOp op, const NDArray& x);
NDArray reduce_axis(ReduceOp op, const NDArray& x, int axis, bool keepdims);

template <ReduceOp op>
NDArray import_reduce(const detail::OpAttrReader& attrs, const std::vector<NDArray>& in) {
  if (!attrs.has("axis")) return reduce_all(op, in[0]);
  return reduce_axis(op, in[0], attrs.int32("axis"), attrs.boolean("keepdims"));
}

// The whole array and one axis (kept), on values with no ties (max, min) and no zero (norm).
template <ReduceOp op>
std::vector<detail::OpExample> reduce_examples() {
  const bool differentiable = op != ReduceOp::argmax;
  std::vector<detail::OpExample> examples{
      detail::example_of_one("whole array", Shape{3, 4},
                             [](const NDArray& x) { return reduce_all(op, x); }),
      detail::example_of_one("axis 1, keepdims", Shape{3, 4},
                             [](const NDArray& x) { return reduce_axis(op, x, 1, true); })};
  if (!differentiable)
    for (detail::OpExample& example : examples) example.differentiable.clear();
  return examples;
}

// One record per row of TANDEM_REDUCE_OPS, in the order of ReduceOp.
const detail::OpDefinition kReduce[] = {
#define TANDEM_REDUCE_RECORD(row, ...)                         \
  detail::OpDefinition{.name = #row,                           \
                       .write_attrs = write_reduce_attrs,      \
                       .import = import_reduce<ReduceOp::row>, \
                       .gradient = reduce_rule,                \
                       .examples = reduce_examples<ReduceOp::row>},
    TANDEM_REDUCE_OPS(TANDEM_REDUCE_RECORD)
#undef TANDEM_REDUCE_RECORD
};
static_assert(std::size(kReduce) == static_cast<std::size_t>(ops::kReduceOpCount));

NDArray reduce_all(ReduceOp op, const NDArray& x) {
  const char* name = ops::op_name(op);
  const ReduceAttrs attrs{op, std::nullopt, false};
  return detail::invoke(
      kReduce[static_cast<int>(op)], {&x}, &attrs,
      [&] {
        detail::check_defined(name, x);
        check_reducible(op, x, x.size());
        // Like MXNet, a whole-array reduction has shape 1.
        return detail::OpPlan{&x.engine(), Shape{1}, ops::result_dtype(op, x.dtype()), x.device()};
      },
      [&](detail::OpOutput& o) { detail::push_reduce_all(op, x, o.out); });
}

NDArray reduce_axis(ReduceOp op, const NDArray& x, int axis, bool keepdims) {
  const char* name = ops::op_name(op);
  ReduceAttrs attrs{op, axis, keepdims};
  return detail::invoke(
      kReduce[static_cast<int>(op)], {&x}, &attrs,
      [&] {
        detail::check_defined(name, x);
        attrs.axis = ops::normalize_axis(axis, x.shape(), name);
        check_reducible(op, x, x.shape()[*attrs.axis]);
        Shape shape = x.shape();
        if (keepdims) {
          shape[*attrs.axis] = 1;
        } else {
          shape = shape.without_axis(*attrs.axis);
        }
        return detail::OpPlan{&x.engine(), shape, ops::result_dtype(op, x.dtype()), x.device()};
      },
      [&](detail::OpOutput& o) { detail::push_reduce_axis(op, x, *attrs.axis, o.out); });
}

}  // namespace

// The records of this file: every row of TANDEM_REDUCE_OPS (written out: the list is generated).
namespace detail {
std::span<const OpDefinition* const> op_definitions_reduce();
std::span<const OpDefinition* const> op_definitions_reduce() {
  static const auto definitions = [] {
    std::array<const OpDefinition*, std::size(kReduce)> list{};
    for (std::size_t i = 0; i < list.size(); ++i) list[i] = &kReduce[i];
    return list;
  }();
  return definitions;
}
}  // namespace detail

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
