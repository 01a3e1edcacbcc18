// conv2d and its gradients: every check at the call, then one queued kernel per op.
#include "tandem/nd/convolution.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/invoke.h"
#include "core/op_definition.h"
#include "core/view_op.h"
#include "ops/gradient_into.h"
#include "ops/size2d_attrs.h"
#include "tandem/errors.h"
#include "tandem/nd/reduce.h"

namespace tandem::nd {

namespace {

using ops::Conv2dGeometry;

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw Error(std::string("tandem: ") + op + ": " + what);
}

void check_options(const char* op, const Conv2dOptions& o) {
  if (o.stride.h < 1 || o.stride.w < 1)
    fail(op, "stride " + o.stride.to_string() + " must be >= 1");
  if (o.dilation.h < 1 || o.dilation.w < 1) {
    fail(op, "dilation " + o.dilation.to_string() + " must be >= 1");
  }
  if (o.padding.h < 0 || o.padding.w < 0) {
    fail(op, "padding " + o.padding.to_string() + " must be >= 0");
  }
  if (o.groups < 1) fail(op, "groups " + std::to_string(o.groups) + " must be >= 1");
}

// The geometry of conv(x of x_shape, weight of w_shape), checked.
Conv2dGeometry geometry(const char* op, const Shape& x, const Shape& w, const Conv2dOptions& o) {
  check_options(op, o);
  if (x.ndim() != 4) fail(op, "x must be 4-D (N, C, H, W), got shape " + x.to_string());
  if (w.ndim() != 4) {
    fail(op, "weight must be 4-D (out_channels, in_channels / groups, KH, KW), got shape " +
                 w.to_string());
  }
  Conv2dGeometry g;
  g.batch = x[0];
  g.in_channels = x[1];
  g.in_h = x[2];
  g.in_w = x[3];
  g.out_channels = w[0];
  g.kernel_h = w[2];
  g.kernel_w = w[3];
  g.stride_h = o.stride.h;
  g.stride_w = o.stride.w;
  g.pad_h = o.padding.h;
  g.pad_w = o.padding.w;
  g.dilation_h = o.dilation.h;
  g.dilation_w = o.dilation.w;
  g.groups = o.groups;
  const std::string shapes = " (x shape " + x.to_string() + ", weight shape " + w.to_string() +
                             ", groups " + std::to_string(o.groups) + ")";
  if (g.in_channels < 1 || g.out_channels < 1 || g.kernel_h < 1 || g.kernel_w < 1) {
    fail(op, "channels and kernel sizes must be >= 1" + shapes);
  }
  if (g.in_channels % g.groups != 0 || g.out_channels % g.groups != 0) {
    fail(op, "the input channels (" + std::to_string(g.in_channels) +
                 ") and the output channels (" + std::to_string(g.out_channels) +
                 ") must both be multiples of groups" + shapes);
  }
  if (w[1] != g.in_channels / g.groups) {
    fail(op, "weight dimension 1 must be in_channels / groups = " +
                 std::to_string(g.in_channels / g.groups) + ", got " + std::to_string(w[1]) +
                 shapes);
  }
  const std::int64_t span_h = g.dilation_h * (g.kernel_h - 1) + 1;
  const std::int64_t span_w = g.dilation_w * (g.kernel_w - 1) + 1;
  if (g.in_h + 2 * g.pad_h < span_h || g.in_w + 2 * g.pad_w < span_w) {
    fail(op, "the dilated kernel (" + std::to_string(span_h) + "x" + std::to_string(span_w) +
                 ") is larger than the padded input (" + std::to_string(g.in_h + 2 * g.pad_h) +
                 "x" + std::to_string(g.in_w + 2 * g.pad_w) + ", padding " + o.padding.to_string() +
                 ", dilation " + o.dilation.to_string() + ")" + shapes);
  }
  g.out_h = (g.in_h + 2 * g.pad_h - span_h) / g.stride_h + 1;
  g.out_w = (g.in_w + 2 * g.pad_w - span_w) / g.stride_w + 1;
  return g;
}

Shape output_shape(const Conv2dGeometry& g) {
  return Shape{g.batch, g.out_channels, g.out_h, g.out_w};
}

// A dense view of `array`: itself when it is row-major already, else a dense copy (queued).
NDArray dense(const NDArray& array) {
  return array.is_contiguous() ? array : array.copy();
}

void check_floating_same(const char* op, const NDArray& a, const NDArray& b) {
  detail::check_floating(op, a.dtype());
  detail::check_same_dtype(op, a, b);
}

void check_shape(const char* op, const char* what, const NDArray& array, const Shape& expected) {
  if (array.shape() != expected) {
    fail(op, std::string(what) + " must have shape " + expected.to_string() + ", got " +
                 array.shape().to_string());
  }
}

// The geometry of a weight gradient, after checking grad_out and x against it.
Conv2dGeometry weight_gradient_geometry(const char* op, const NDArray& grad_out, const NDArray& x,
                                        const Shape& weight_shape, const Conv2dOptions& options) {
  check_floating_same(op, grad_out, x);
  const Conv2dGeometry g = geometry(op, x.shape(), weight_shape, options);
  check_shape(op, "grad_out", grad_out, output_shape(g));
  return g;
}

// conv2d_backward_weight, its result written into input `input`'s destination when backward
// offers one (gradient_into.h; `into` may be empty): the buffer is the kernel's output, or the
// same op adds the kernel's output into it (grad_req add). Returns undefined when it wrote the
// destination.
NDArray backward_weight(const NDArray& grad_out, const NDArray& x, const Shape& weight_shape,
                        const Conv2dOptions& options,
                        std::vector<detail::GradientDestination>& into, std::size_t input) {
  const char* op = "conv2d_backward_weight";
  Engine& engine = detail::check_same_place(op, {&grad_out, &x});
  const Conv2dGeometry g = weight_gradient_geometry(op, grad_out, x, weight_shape, options);
  const detail::GradientOutput out =
      detail::gradient_output(into, input, engine, weight_shape, x.dtype(), x.device(), op);
  const NDArray dx = dense(x), dy = dense(grad_out);
  const std::vector<detail::GradientAdd> adds = detail::gradient_adds({&out});
  const std::vector<Var> writes = detail::gradient_writes({&out});
  detail::push_view_op<3>(
      engine, out.array.device(), op,
      {detail::lazy_view(dx), detail::lazy_view(dy), detail::lazy_view(out.array)},
      {dx.var(), dy.var()}, writes, [g, adds](const ops::Kernels& k, Stream* s, const auto& v) {
        k.conv2d_backward_weight(s, v[0], v[1], v[2], g);
        detail::add_formed_gradients(k, s, adds);
      });
  out.queued();
  return out.result();
}

// The bias gradient: the sum of grad_out over the batch and the spatial axes, one op (the
// conv2d_backward_bias kernel; a strided grad_out is made dense first), written into the bias's
// gradient buffer when backward offers it (and added into it in the same op for grad_req add).
NDArray backward_bias(const NDArray& grad_out, std::vector<detail::GradientDestination>& into,
                      std::size_t input) {
  const char* op = "conv2d_backward_bias";
  detail::check_defined(op, grad_out);
  detail::check_floating(op, grad_out.dtype());
  if (grad_out.ndim() != 4) {
    fail(op, "grad_out must be 4-D (N, O, OH, OW), got shape " + grad_out.shape().to_string());
  }
  const Shape channels{grad_out.shape()[1]};
  const detail::GradientOutput out = detail::gradient_output(
      into, input, grad_out.engine(), channels, grad_out.dtype(), grad_out.device(), op);
  const NDArray dy = dense(grad_out);
  const std::vector<detail::GradientAdd> adds = detail::gradient_adds({&out});
  detail::push_view_op<2>(grad_out.engine(), out.array.device(), op,
                          {detail::lazy_view(dy), detail::lazy_view(out.array)}, {dy.var()},
                          detail::gradient_writes({&out}),
                          [adds](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.conv2d_backward_bias(s, v[0], v[1]);
                            detail::add_formed_gradients(k, s, adds);
                          });
  out.queued();
  return out.result();
}

// The weight's and the bias's gradients in one op (a training step's convolution with a bias
// needs both): the two kernels, then their adds for grad_req add. Returns {dweight, dbias}, each
// undefined when its destination received it.
std::pair<NDArray, NDArray> backward_weight_and_bias(
    const NDArray& grad_out, const NDArray& x, const Shape& weight_shape,
    const Conv2dOptions& options, std::vector<detail::GradientDestination>& into) {
  const char* op = "conv2d_backward_weight_bias";
  Engine& engine = detail::check_same_place(op, {&grad_out, &x});
  const Conv2dGeometry g = weight_gradient_geometry(op, grad_out, x, weight_shape, options);
  const detail::GradientOutput dw =
      detail::gradient_output(into, 1, engine, weight_shape, x.dtype(), x.device(), op);
  const detail::GradientOutput db =
      detail::gradient_output(into, 2, engine, Shape{g.out_channels}, x.dtype(), x.device(), op);
  const NDArray dx = dense(x), dy = dense(grad_out);
  const std::vector<detail::GradientAdd> adds = detail::gradient_adds({&dw, &db});
  detail::push_view_op<4>(engine, dw.array.device(), op,
                          {detail::lazy_view(dx), detail::lazy_view(dy),
                           detail::lazy_view(dw.array), detail::lazy_view(db.array)},
                          {dx.var(), dy.var()}, detail::gradient_writes({&dw, &db}),
                          [g, adds](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.conv2d_backward_weight(s, v[0], v[1], v[2], g);
                            k.conv2d_backward_bias(s, v[1], v[3]);
                            detail::add_formed_gradients(k, s, adds);
                          });
  dw.queued();
  db.queued();
  return {dw.result(), db.result()};
}

// The conv2d rule: each gradient only when its input needs one; it saves only what its
// gradients read (dx reads the weight, dweight reads x). The weight's and the bias's gradients
// go straight into their buffers when backward offers them (gradient_into.h).
detail::OpGradient conv2d_gradient(const detail::OpCall& c) {
  const NDArray &x = *c.inputs[0], &weight = *c.inputs[1], &bias = *c.inputs[2];
  const Conv2dOptions options = detail::attrs_of<Conv2dOptions>(c);
  const bool need_x = x.needs_grad(), need_w = weight.needs_grad();
  const bool has_bias = bias.defined(), need_b = has_bias && bias.needs_grad();
  detail::OpGradient gradient;
  gradient.inputs = {x, weight};
  if (has_bias) gradient.inputs.push_back(bias);
  gradient.saved = {need_w ? x : NDArray(), need_x ? weight : NDArray()};
  gradient.rule_into = [=, x_shape = x.shape(), w_shape = weight.shape()](
                           const std::vector<NDArray>& g, const std::vector<NDArray>& saved,
                           std::vector<detail::GradientDestination>& into) {
    std::vector<NDArray> grads{need_x ? conv2d_backward_data(g[0], saved[1], x_shape, options)
                                      : NDArray()};
    if (need_w && need_b) {
      auto [dw, db] = backward_weight_and_bias(g[0], saved[0], w_shape, options, into);
      grads.push_back(std::move(dw));
      grads.push_back(std::move(db));
      return grads;
    }
    grads.push_back(need_w ? backward_weight(g[0], saved[0], w_shape, options, into, 1)
                           : NDArray());
    if (has_bias) grads.push_back(need_b ? backward_bias(g[0], into, 2) : NDArray());
    return grads;
  };
  gradient.rule = [into = gradient.rule_into](const std::vector<NDArray>& g,
                                              const std::vector<NDArray>& saved) {
    std::vector<detail::GradientDestination> none;
    return into(g, saved, none);
  };
  return gradient;
}

const detail::OpDefinition kConv2d{
    .name = "conv2d",
    .num_inputs = -1,  // x, weight and an optional bias: checked by the import
    .write_attrs =
        [](const detail::OpCall& c, detail::OpAttrWriter& out) {
          const Conv2dOptions& options = detail::attrs_of<Conv2dOptions>(c);
          detail::write_size2d(out, "stride", options.stride);
          detail::write_size2d(out, "padding", options.padding);
          detail::write_size2d(out, "dilation", options.dilation);
          out.integer("groups", options.groups);
        },
    .import =
        [](const detail::OpAttrReader& attrs, const std::vector<NDArray>& in) {
          if (in.size() != 2 && in.size() != 3) {
            throw Error("tandem: conv2d takes 2 or 3 inputs (x, weight, bias), got " +
                        std::to_string(in.size()));
          }
          const Conv2dOptions options{.stride = detail::read_size2d(attrs, "stride", "conv2d"),
                                      .padding = detail::read_size2d(attrs, "padding", "conv2d"),
                                      .dilation = detail::read_size2d(attrs, "dilation", "conv2d"),
                                      .groups = attrs.integer("groups")};
          return in.size() == 3 ? conv2d(in[0], in[1], in[2], options)
                                : conv2d(in[0], in[1], options);
        },
    .gradient = conv2d_gradient,
    .examples =
        [] {
          const auto example = [](const char* label, bool bias, Conv2dOptions options) {
            return detail::OpExample{
                .label = label,
                .inputs =
                    [bias](Device d) {
                      std::vector<NDArray> in{
                          detail::example_array({2, 2, 5, 5}, d, 31, -1.0, 1.0),
                          detail::example_array({4, 2, 3, 3}, d, 32, -1.0, 1.0)};
                      if (bias) in.push_back(detail::example_array({4}, d, 33, -1.0, 1.0));
                      return in;
                    },
                .run =
                    [options](const std::vector<NDArray>& in) {
                      return in.size() == 3 ? conv2d(in[0], in[1], in[2], options)
                                            : conv2d(in[0], in[1], options);
                    },
                .differentiable = bias ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1}};
          };
          return std::vector<detail::OpExample>{
              example("bias, padding 1", true, Conv2dOptions{.padding = Size2d{1}}),
              example("no bias, stride 2", false, Conv2dOptions{.stride = Size2d{2}})};
        }};

}  // namespace

namespace detail {
TANDEM_OP_DEFINITIONS(convolution, &kConv2d)
}  // namespace detail

Shape conv2d_output_shape(const Shape& x, const Shape& weight, const Conv2dOptions& options) {
  return output_shape(geometry("conv2d", x, weight, options));
}

NDArray conv2d(const NDArray& x, const NDArray& weight, const NDArray& bias,
               const Conv2dOptions& options) {
  const char* op = "conv2d";
  Conv2dGeometry g;
  return detail::invoke(
      kConv2d, {&x, &weight, &bias}, &options,
      [&] {
        Engine& engine = bias.defined() ? detail::check_same_place(op, {&x, &weight, &bias})
                                        : detail::check_same_place(op, {&x, &weight});
        check_floating_same(op, x, weight);
        g = geometry(op, x.shape(), weight.shape(), options);
        if (bias.defined()) {
          detail::check_same_dtype(op, x, bias);
          check_shape(op, "bias", bias, Shape{g.out_channels});
        }
        return detail::OpPlan{&engine, output_shape(g), x.dtype(), x.device()};
      },
      [&](detail::OpOutput& o) {
        // The dense copies are the op's own business, not nodes of the graph.
        const NDArray dx = dense(x), dw = dense(weight),
                      db = bias.defined() ? dense(bias) : NDArray();
        const detail::LazyView vb = db.defined() ? detail::lazy_view(db) : detail::LazyView{};
        const Var reads[3] = {dx.var(), dw.var(), db.defined() ? db.var() : dw.var()};
        detail::push_view_op<4>(
            o.out.engine(), o.out.device(), op,
            {detail::lazy_view(dx), detail::lazy_view(dw), vb, detail::lazy_view(o.out)},
            std::span<const Var>(reads), {o.out.var()},
            [g](const ops::Kernels& k, Stream* s, const auto& v) {
              k.conv2d(s, v[0], v[1], v[2], v[3], g);
            });
      });
}

NDArray conv2d(const NDArray& x, const NDArray& weight, const Conv2dOptions& options) {
  return conv2d(x, weight, NDArray(), options);
}

NDArray conv2d_backward_data(const NDArray& grad_out, const NDArray& weight,
                             const Shape& input_shape, const Conv2dOptions& options) {
  const char* op = "conv2d_backward_data";
  Engine& engine = detail::check_same_place(op, {&grad_out, &weight});
  check_floating_same(op, grad_out, weight);
  const Conv2dGeometry g = geometry(op, input_shape, weight.shape(), options);
  check_shape(op, "grad_out", grad_out, output_shape(g));
  NDArray out =
      detail::allocate_array(engine, input_shape, grad_out.dtype(), grad_out.device(), op);
  const NDArray dy = dense(grad_out), dw = dense(weight);
  detail::push_view_op<3>(engine, out.device(), op,
                          {detail::lazy_view(dy), detail::lazy_view(dw), detail::lazy_view(out)},
                          {dy.var(), dw.var()}, {out.var()},
                          [g](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.conv2d_backward_data(s, v[0], v[1], v[2], g);
                          });
  return out;
}

NDArray conv2d_backward_weight(const NDArray& grad_out, const NDArray& x, const Shape& weight_shape,
                               const Conv2dOptions& options) {
  std::vector<detail::GradientDestination> none;
  return backward_weight(grad_out, x, weight_shape, options, none, 0);
}

NDArray conv2d_backward_bias(const NDArray& grad_out) {
  std::vector<detail::GradientDestination> none;
  return backward_bias(grad_out, none, 0);
}

}  // namespace tandem::nd
