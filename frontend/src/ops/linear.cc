// linear(x, weight, bias) = x . weight^T + bias as one op: the gemm of dot(x, weight.T()) and the
// broadcast add of `+ bias` in one engine op, on the same views, so its values are those of the
// two ops bit for bit. Its record serves autograd only: under the export trace it runs as dot and
// add (a graph of known nodes), so no graph names it and it is not among TANDEM_OP_DEFINITIONS,
// as training-mode batch_norm.
#include <string>

#include "core/checks.h"
#include "core/invoke.h"
#include "core/kernels.h"
#include "core/lazy_view.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "ops/elementwise_records.h"
#include "ops/product_into.h"
#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/linalg.h"
#include "tandem/nd/network.h"

namespace tandem::nd {

namespace {

// The rule of dot(x, weight.T()) + bias, in the order backward ran the two ops' rules (the add's
// first, then the dot's: dbias, dx, dweight) and with their very calls, so the gradients and
// their bits are those of the unfused ops. dweight goes straight into the weight's gradient
// buffer when backward offers it (a gemm writing or accumulating there), dbias into the bias's.
detail::OpGradient linear_gradient(const detail::OpCall& c) {
  const NDArray &x = c.input(0), &weight = c.input(1), &bias = c.input(2);
  if (!ops::is_floating(c.out->dtype())) return {};
  const bool need_x = c.needs_gradient(0), need_w = c.needs_gradient(1),
             need_b = c.needs_gradient(2);
  detail::OpGradient gradient;
  gradient.inputs = {x, weight, bias};
  gradient.saved = {need_w ? x : NDArray(), need_x ? weight : NDArray()};
  gradient.rule_into = [need_x, need_w, need_b, bias_shape = bias.shape()](
                           const std::vector<NDArray>& grads, const std::vector<NDArray>& saved,
                           std::vector<detail::GradientDestination>& destinations) {
    const NDArray& g = grads[0];  // N x U
    const auto into = [&](std::size_t input, const NDArray& left, const NDArray& right) {
      if (input >= destinations.size()) return false;
      detail::GradientDestination& destination = destinations[input];
      if (!destination.buffer.defined()) return false;
      destination.written =
          detail::push_product_into(left, right, destination.buffer, destination.add);
      return destination.written;
    };
    NDArray gx, gw, gb;
    if (need_b) gb = detail::sum_to_shape_into(g, bias_shape, destinations, 2);
    if (need_x && !into(0, g, saved[1])) gx = dot(g, saved[1]);
    if (need_w) {
      // weight^T's gradient is x^T . g; formed transposed, straight into weight's buffer.
      const NDArray g_t = g.T();
      if (!into(1, g_t, saved[0])) gw = dot(saved[0].T(), g).T();
    }
    return std::vector<NDArray>{gx, gw, gb};
  };
  gradient.rule = [into = gradient.rule_into](const std::vector<NDArray>& grads,
                                              const std::vector<NDArray>& saved) {
    std::vector<detail::GradientDestination> none;
    return into(grads, saved, none);
  };
  return gradient;
}

const detail::OpDefinition kLinear{.name = "linear", .num_inputs = 3, .gradient = linear_gradient};

void check_linear(const NDArray& x, const NDArray& weight, const NDArray& bias) {
  const char* op = "linear";
  detail::check_same_place(op, {&x, &weight, &bias});
  detail::check_same_dtype(op, x, weight);
  detail::check_same_dtype(op, x, bias);
  if (x.ndim() != 2 || weight.ndim() != 2 || bias.ndim() != 1 ||
      x.shape()[1] != weight.shape()[1] || bias.shape()[0] != weight.shape()[0]) {
    throw Error("tandem: linear: takes x (N x K), weight (U x K) and bias (U), got shapes " +
                x.shape().to_string() + ", " + weight.shape().to_string() + " and " +
                bias.shape().to_string());
  }
}

}  // namespace

NDArray linear(const NDArray& x, const NDArray& weight, const NDArray& bias) {
  detail::check_defined("linear", x);
  detail::check_defined("linear", weight);
  if (!bias.defined()) return dot(x, weight.T());
  if (detail::modes_see_each_op()) {
    check_linear(x, weight, bias);
    return dot(x, weight.T()) + bias;
  }
  return detail::invoke(
      kLinear, {&x, &weight, &bias}, nullptr,
      [&] {
        check_linear(x, weight, bias);
        return detail::OpPlan{&x.engine(), Shape{x.shape()[0], weight.shape()[0]}, x.dtype(),
                              x.device()};
      },
      [&](detail::OpOutput& o) {
        // The views dot(x, weight.T()) and `+ bias` would take.
        detail::LazyView vw = detail::lazy_view(weight);
        vw.layout.shape = Shape{weight.shape()[1], weight.shape()[0]};
        vw.layout.strides = Strides{weight.strides()[1], weight.strides()[0]};
        const detail::LazyView vx = detail::lazy_view(x), vy = detail::lazy_view(o.out),
                               vb = detail::lazy_broadcast(bias, o.out.shape());
        o.out.engine().push(
            [vx, vw, vy, vb](RunContext& ctx) {
              const ops::Kernels& k = detail::kernels(ctx);
              const ops::ArrayView y = vy.resolve();
              k.gemm(ctx.stream(), vx.resolve(), vw.resolve(), y, false);
              k.binary(ctx.stream(), ops::BinaryOp::add, y, vb.resolve(), y);
            },
            o.out.device(), {x.var(), weight.var(), bias.var()}, {o.out.var()}, {.name = "linear"});
      });
}

}  // namespace tandem::nd
