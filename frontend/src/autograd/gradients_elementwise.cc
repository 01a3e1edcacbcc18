// Gradient rules of the element-wise ops. Broadcast inputs get the output gradient summed over
// the axes they were broadcast along.
#include "autograd/record.h"
#include "autograd/tape.h"
#include "core/access.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/reduce.h"

namespace tandem::autograd::detail {

using nd::NDArray;
using ops::BinaryOp;
using ops::UnaryOp;

namespace {

bool differentiable(BinaryOp op) {
  switch (op) {
    case BinaryOp::add:
    case BinaryOp::subtract:
    case BinaryOp::multiply:
    case BinaryOp::divide:
    case BinaryOp::maximum:
    case BinaryOp::minimum:
    case BinaryOp::power:
      return true;
    default:
      return false;
  }
}

// The input gradient of x, given the output gradient g, the input x and the output y.
NDArray unary_gradient(UnaryOp op, const NDArray& g, const NDArray& x, const NDArray& y) {
  switch (op) {
    case UnaryOp::negative:
      return nd::negative(g);
    case UnaryOp::abs:
      return g * ((x > 0.0) - (x < 0.0));
    case UnaryOp::square:
      return g * x * 2.0;
    case UnaryOp::relu:
      return g * (x > 0.0);
    case UnaryOp::exp:
      return g * y;
    case UnaryOp::log:
      return g / x;
    case UnaryOp::sqrt:
      return g / (y * 2.0);
    case UnaryOp::sigmoid:
      return g * y * (1.0 - y);
    case UnaryOp::tanh:
      return g * (1.0 - nd::square(y));
  }
  return {};
}

// What each rule reads: x, y, both or neither.
bool unary_reads_input(UnaryOp op) {
  return op == UnaryOp::abs || op == UnaryOp::square || op == UnaryOp::relu || op == UnaryOp::log;
}
bool unary_reads_output(UnaryOp op) {
  return op == UnaryOp::exp || op == UnaryOp::sqrt || op == UnaryOp::sigmoid || op == UnaryOp::tanh;
}

}  // namespace

void record_unary(UnaryOp op, const NDArray& x, NDArray& out) {
  if (!ops::is_floating(x.dtype()) || !needs_grad(x)) return;
  Saver save;
  const NDArray saved_x = unary_reads_input(op) ? save(x) : NDArray();
  const NDArray saved_y = unary_reads_output(op) ? save(out) : NDArray();
  record_node(ops::op_name(op), {x}, {&out}, save.take(),
              [op, saved_x, saved_y](const std::vector<NDArray>& g) {
                return std::vector<NDArray>{unary_gradient(op, g[0], saved_x, saved_y)};
              });
}

void record_binary(BinaryOp op, const NDArray& a, const NDArray& b, NDArray& out) {
  if (!differentiable(op) || !ops::is_floating(out.dtype())) return;
  const bool need_a = needs_grad(a), need_b = needs_grad(b);
  if (!need_a && !need_b) return;
  Saver save;
  NDArray sa, sb, sy;
  switch (op) {
    case BinaryOp::add:
    case BinaryOp::subtract:
      break;
    case BinaryOp::multiply:
      if (need_a) sb = save(b);
      if (need_b) sa = save(a);
      break;
    case BinaryOp::divide:
      sb = save(b);
      if (need_b) sy = save(out);
      break;
    case BinaryOp::power:
      sa = save(a);
      sb = save(b);
      if (need_b) sy = save(out);
      break;
    default:  // maximum, minimum
      sa = save(a);
      sb = save(b);
      break;
  }
  const nd::Shape shape_a = a.shape(), shape_b = b.shape();
  record_node(
      ops::op_name(op), {a, b}, {&out}, save.take(),
      [op, need_a, need_b, sa, sb, sy, shape_a, shape_b](const std::vector<NDArray>& grads) {
        const NDArray& g = grads[0];
        NDArray ga, gb;
        switch (op) {
          case BinaryOp::add:
            ga = g;
            gb = g;
            break;
          case BinaryOp::subtract:
            ga = g;
            if (need_b) gb = nd::negative(g);
            break;
          case BinaryOp::multiply:
            if (need_a) ga = g * sb;
            if (need_b) gb = g * sa;
            break;
          case BinaryOp::divide:
            if (need_a) ga = g / sb;
            if (need_b) gb = nd::negative(g * sy / sb);
            break;
          case BinaryOp::maximum:
          case BinaryOp::minimum: {
            // Ties go to the first input.
            const NDArray to_a = op == BinaryOp::maximum ? (sa >= sb) : (sa <= sb);
            if (need_a) ga = g * to_a;
            if (need_b) gb = g * (1.0 - to_a);
            break;
          }
          case BinaryOp::power:
            if (need_a) ga = g * sb * nd::power(sa, sb - 1.0);
            if (need_b) gb = g * sy * nd::log(sa);
            break;
          default:
            break;
        }
        return std::vector<NDArray>{need_a ? sum_to_shape(ga, shape_a) : NDArray(),
                                    need_b ? sum_to_shape(gb, shape_b) : NDArray()};
      });
}

void record_binary_scalar(BinaryOp op, const NDArray& a, double scalar, bool scalar_first,
                          NDArray& out) {
  if (!differentiable(op) || !ops::is_floating(out.dtype()) || !needs_grad(a)) return;
  Saver save;
  NDArray sa, sy;
  if (op == BinaryOp::maximum || op == BinaryOp::minimum || op == BinaryOp::power) sa = save(a);
  if (op == BinaryOp::divide && scalar_first) {
    sa = save(a);
    sy = save(out);
  }
  record_node(ops::op_name(op), {a}, {&out}, save.take(),
              [op, scalar, scalar_first, sa, sy](const std::vector<NDArray>& grads) {
                const NDArray& g = grads[0];
                NDArray ga;
                switch (op) {
                  case BinaryOp::add:
                    ga = g;
                    break;
                  case BinaryOp::subtract:
                    ga = scalar_first ? nd::negative(g) : g;
                    break;
                  case BinaryOp::multiply:
                    ga = g * scalar;
                    break;
                  case BinaryOp::divide:  // a / s, or s / a (derivative -s / a^2 = -y / a)
                    ga = scalar_first ? nd::negative(g * sy / sa) : g / scalar;
                    break;
                  case BinaryOp::maximum:
                    ga = g * (sa >= scalar);
                    break;
                  case BinaryOp::minimum:
                    ga = g * (sa <= scalar);
                    break;
                  case BinaryOp::power:
                    ga = g * scalar * nd::power(sa, scalar - 1.0);
                    break;
                  default:
                    break;
                }
                return std::vector<NDArray>{ga};
              });
}

}  // namespace tandem::autograd::detail
