// Element-wise functions and operators: checks at the call, then one queued kernel.
#include "tandem/nd/elementwise.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/elementwise_push.h"
#include "core/invoke.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "core/op_dispatch.h"
#include "core/view_op.h"
#include "ops/elementwise_records.h"
#include "tandem/errors.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/reduce.h"
#include "tandem/ops/convert.h"

namespace tandem::nd {

using ops::BinaryOp;
using ops::UnaryOp;

namespace {

NDArray binary(BinaryOp op, const NDArray& a, const NDArray& b) {
  const char* name = ops::op_name(op);
  return detail::invoke(
      detail::record_of(op), {&a, &b}, nullptr,
      [&] {
        Engine& engine = detail::check_same_place(name, {&a, &b});
        detail::check_same_dtype(name, a, b);
        detail::check_computable(name, a.dtype());
        if (ops::needs_floating(op)) detail::check_floating(name, a.dtype());
        return detail::OpPlan{&engine, ops::broadcast_shapes(a.shape(), b.shape(), name), a.dtype(),
                              a.device()};
      },
      [&](detail::OpOutput& o) { detail::push_binary(op, a, b, o.out); });
}

void check_scalar_divisor(BinaryOp op, DType dtype, double scalar) {
  if (op == BinaryOp::divide && !ops::is_floating(dtype) &&
      ops::convert<std::int64_t>(scalar) == 0) {
    throw Error(std::string("tandem: divide: integer division by zero (") + dtype_name(dtype) +
                " array divided by the scalar " + std::to_string(scalar) + ")");
  }
}

NDArray binary_scalar(BinaryOp op, const NDArray& a, double scalar, bool scalar_first) {
  const char* name = ops::op_name(op);
  const detail::BinaryScalarAttrs attrs{scalar, scalar_first};
  const NDArray* inputs[] = {&a};
  // The autograd node keeps the op's name ("add"); the graph node is the scalar form's.
  return detail::invoke_inputs(
      detail::scalar_record_of(op), inputs, &attrs, name,
      [&] {
        detail::check_defined(name, a);
        detail::check_computable(name, a.dtype());
        if (ops::needs_floating(op)) detail::check_floating(name, a.dtype());
        if (!scalar_first) check_scalar_divisor(op, a.dtype(), scalar);
        return detail::OpPlan{&a.engine(), a.shape(), a.dtype(), a.device()};
      },
      [&](detail::OpOutput& o) { detail::push_binary_scalar(op, a, scalar, scalar_first, o.out); });
}

NDArray unary(UnaryOp op, const NDArray& x) {
  const char* name = ops::op_name(op);
  return detail::invoke(
      detail::record_of(op), {&x}, nullptr,
      [&] {
        detail::check_defined(name, x);
        detail::check_computable(name, x.dtype());
        if (ops::needs_floating(op)) detail::check_floating(name, x.dtype());
        return detail::OpPlan{&x.engine(), x.shape(), x.dtype(), x.device()};
      },
      [&](detail::OpOutput& o) { detail::push_unary(op, x, o.out); });
}

void in_place(BinaryOp op, NDArray& target, const NDArray& other) {
  const char* name = ops::op_name(op);
  detail::check_same_place(name, {&target, &other});
  detail::check_same_dtype(name, target, other);
  detail::check_computable(name, target.dtype());
  const Shape shape = ops::broadcast_shapes(target.shape(), other.shape(), name);
  if (!(shape == target.shape())) {
    throw Error(std::string("tandem: ") + name + " (in place): the result would have shape " +
                shape.to_string() + ", but the target has shape " + target.shape().to_string() +
                " (the other operand, " + other.shape().to_string() +
                ", must broadcast to the target's shape)");
  }
  detail::note_in_place_write(name, target, &other);
  // A partly overlapping operand could be overwritten before it is read: use a copy.
  const NDArray source = detail::overlaps_differently(target, other) ? other.copy() : other;
  detail::push_binary(op, target, source, target);
}

void in_place_scalar(BinaryOp op, NDArray& target, double scalar) {
  const char* name = ops::op_name(op);
  detail::check_defined(name, target);
  detail::check_computable(name, target.dtype());
  check_scalar_divisor(op, target.dtype(), scalar);
  detail::note_in_place_write(name, target);
  detail::push_binary_scalar(op, target, scalar, false, target);
}

}  // namespace

NDArray detail::unary_op(UnaryOp op, const NDArray& x) {
  return unary(op, x);
}
NDArray detail::binary_op(BinaryOp op, const NDArray& a, const NDArray& b) {
  return binary(op, a, b);
}
NDArray detail::binary_scalar_op(BinaryOp op, const NDArray& a, double scalar, bool scalar_first) {
  return binary_scalar(op, a, scalar, scalar_first);
}

NDArray maximum(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::maximum, a, b, false);
}
NDArray minimum(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::minimum, a, b, false);
}

NDArray clip(const NDArray& x, double lo, double hi) {
  detail::check_defined("clip", x);
  if (!(lo <= hi)) {
    throw Error("tandem: clip: the lower bound " + std::to_string(lo) +
                " must not exceed the upper bound " + std::to_string(hi) + " (array of shape " +
                x.shape().to_string() + ")");
  }
  return minimum(maximum(x, lo), hi);
}

namespace {

// The where rule: the output gradient goes to the branch each element took, summed over the
// axes along which that branch was broadcast.
detail::OpGradient where_gradient(const detail::OpCall& c) {
  const NDArray &condition = *c.inputs[0], &a = *c.inputs[1], &b = *c.inputs[2];
  detail::OpGradient gradient;
  gradient.inputs = {condition, a, b};
  gradient.saved = {condition};
  gradient.rule = [a_shape = a.shape(), b_shape = b.shape()](const std::vector<NDArray>& g,
                                                             const std::vector<NDArray>& saved) {
    const NDArray zero = zeros(g[0].shape(), g[0].dtype(), g[0].device());
    return std::vector<NDArray>{NDArray(),
                                detail::sum_to_shape(where(saved[0], g[0], zero), a_shape),
                                detail::sum_to_shape(where(saved[0], zero, g[0]), b_shape)};
  };
  return gradient;
}

}  // namespace

namespace detail {
const OpDefinition kWhere{
    .name = "where",
    .num_inputs = 3,
    .import = [](const OpAttrReader&,
                 const std::vector<NDArray>& in) { return where(in[0], in[1], in[2]); },
    .gradient = where_gradient,
    .examples =
        [] {
          // A 0/1 condition of its own dtype, b broadcast along the rows.
          return std::vector<OpExample>{OpExample{
              .label = "int64 condition, b broadcast",
              .inputs =
                  [](Device d) {
                    return std::vector<NDArray>{example_array({3, 4}, d, 51, 0.0, 2.0, int64),
                                                example_array({3, 4}, d, 52, -1.0, 1.0),
                                                example_array({4}, d, 53, -1.0, 1.0)};
                  },
              .run = [](const std::vector<NDArray>& in) { return where(in[0], in[1], in[2]); },
              .differentiable = {1, 2}}};
        }};
TANDEM_OP_DEFINITIONS(elementwise, &kWhere)
}  // namespace detail

// One kernel (the where family of ops::Kernels) over the three inputs broadcast to the result.
NDArray where(const NDArray& condition, const NDArray& a, const NDArray& b) {
  const char* op = "where";
  Shape shape;
  return detail::invoke(
      detail::kWhere, {&condition, &a, &b}, nullptr,
      [&] {
        Engine& engine = detail::check_same_place(op, {&condition, &a, &b});
        detail::check_same_dtype(op, a, b);
        detail::check_computable(op, a.dtype());
        detail::check_computable(op, condition.dtype());
        shape = ops::broadcast_shapes(ops::broadcast_shapes(condition.shape(), a.shape(), op),
                                      b.shape(), op);
        return detail::OpPlan{&engine, shape, a.dtype(), a.device()};
      },
      [&](detail::OpOutput& o) {
        detail::push_view_op<4>(
            o.out.engine(), o.out.device(), op,
            {detail::lazy_broadcast(condition, shape), detail::lazy_broadcast(a, shape),
             detail::lazy_broadcast(b, shape), detail::lazy_view(o.out)},
            {condition.var(), a.var(), b.var()}, {o.out.var()},
            [](const ops::Kernels& k, Stream* s, const auto& v) {
              k.where(s, v[0], v[1], v[2], v[3]);
            });
      });
}

NDArray where(const NDArray& condition, const NDArray& a, double b) {
  detail::check_defined("where", a);
  return where(condition, a, full(Shape{1}, b, a.dtype(), a.device()));
}
NDArray power(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::power, a, b, false);
}
NDArray operator+(const NDArray& a, const NDArray& b) {
  return add(a, b);
}
NDArray operator-(const NDArray& a, const NDArray& b) {
  return subtract(a, b);
}
NDArray operator*(const NDArray& a, const NDArray& b) {
  return multiply(a, b);
}
NDArray operator/(const NDArray& a, const NDArray& b) {
  return divide(a, b);
}
NDArray operator+(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::add, a, b, false);
}
NDArray operator-(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::subtract, a, b, false);
}
NDArray operator*(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::multiply, a, b, false);
}
NDArray operator/(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::divide, a, b, false);
}
NDArray operator+(double a, const NDArray& b) {
  return binary_scalar(BinaryOp::add, b, a, true);
}
NDArray operator-(double a, const NDArray& b) {
  return binary_scalar(BinaryOp::subtract, b, a, true);
}
NDArray operator*(double a, const NDArray& b) {
  return binary_scalar(BinaryOp::multiply, b, a, true);
}
NDArray operator/(double a, const NDArray& b) {
  return binary_scalar(BinaryOp::divide, b, a, true);
}
NDArray operator-(const NDArray& x) {
  return negative(x);
}

NDArray operator==(const NDArray& a, const NDArray& b) {
  return equal(a, b);
}
NDArray operator!=(const NDArray& a, const NDArray& b) {
  return not_equal(a, b);
}
NDArray operator<(const NDArray& a, const NDArray& b) {
  return less(a, b);
}
NDArray operator<=(const NDArray& a, const NDArray& b) {
  return less_equal(a, b);
}
NDArray operator>(const NDArray& a, const NDArray& b) {
  return greater(a, b);
}
NDArray operator>=(const NDArray& a, const NDArray& b) {
  return greater_equal(a, b);
}
NDArray operator==(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::equal, a, b, false);
}
NDArray operator!=(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::not_equal, a, b, false);
}
NDArray operator<(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::less, a, b, false);
}
NDArray operator<=(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::less_equal, a, b, false);
}
NDArray operator>(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::greater, a, b, false);
}
NDArray operator>=(const NDArray& a, double b) {
  return binary_scalar(BinaryOp::greater_equal, a, b, false);
}

NDArray& NDArray::operator+=(const NDArray& other) {
  in_place(BinaryOp::add, *this, other);
  return *this;
}
NDArray& NDArray::operator-=(const NDArray& other) {
  in_place(BinaryOp::subtract, *this, other);
  return *this;
}
NDArray& NDArray::operator*=(const NDArray& other) {
  in_place(BinaryOp::multiply, *this, other);
  return *this;
}
NDArray& NDArray::operator/=(const NDArray& other) {
  in_place(BinaryOp::divide, *this, other);
  return *this;
}
NDArray& NDArray::operator+=(double value) {
  in_place_scalar(BinaryOp::add, *this, value);
  return *this;
}
NDArray& NDArray::operator-=(double value) {
  in_place_scalar(BinaryOp::subtract, *this, value);
  return *this;
}
NDArray& NDArray::operator*=(double value) {
  in_place_scalar(BinaryOp::multiply, *this, value);
  return *this;
}
NDArray& NDArray::operator/=(double value) {
  in_place_scalar(BinaryOp::divide, *this, value);
  return *this;
}

NDArray NDArray::exp() const {
  return nd::exp(*this);
}

}  // namespace tandem::nd

namespace tandem {

// One public function per row, named after it (tandem/nd/elementwise.h declares each: a row
// without its declaration does not compile, as a qualified definition needs one).
#define TANDEM_UNARY_FUNCTION(name, ...)   \
  nd::NDArray nd::name(const NDArray& x) { \
    return unary(ops::UnaryOp::name, x);   \
  }
TANDEM_UNARY_OPS(TANDEM_UNARY_FUNCTION)
#undef TANDEM_UNARY_FUNCTION

#define TANDEM_BINARY_FUNCTION(name, ...)                    \
  nd::NDArray nd::name(const NDArray& a, const NDArray& b) { \
    return binary(ops::BinaryOp::name, a, b);                \
  }
TANDEM_BINARY_OPS(TANDEM_BINARY_FUNCTION)
#undef TANDEM_BINARY_FUNCTION

}  // namespace tandem
