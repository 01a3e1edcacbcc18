// Max, average and global average pooling and their gradients: every check at the call, then
// one queued kernel per op.
#include "tandem/nd/pooling.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/invoke.h"
#include "core/op_definition.h"
#include "core/view_op.h"
#include "ops/size2d_attrs.h"
#include "tandem/errors.h"

namespace tandem::nd {

namespace {

using ops::Pool2dGeometry;

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw Error(std::string("tandem: ") + op + ": " + what);
}

Pool2dGeometry geometry(const char* op, const Shape& x, const Pool2dOptions& o) {
  if (x.ndim() != 4) fail(op, "x must be 4-D (N, C, H, W), got shape " + x.to_string());
  const Size2d stride{o.stride.h == 0 ? o.kernel.h : o.stride.h,
                      o.stride.w == 0 ? o.kernel.w : o.stride.w};
  if (o.kernel.h < 1 || o.kernel.w < 1) {
    fail(op, "kernel " + o.kernel.to_string() + " must be >= 1 (set Pool2dOptions::kernel)");
  }
  if (stride.h < 1 || stride.w < 1) fail(op, "stride " + stride.to_string() + " must be >= 1");
  if (o.padding.h < 0 || o.padding.w < 0 || o.padding.h > o.kernel.h / 2 ||
      o.padding.w > o.kernel.w / 2) {
    fail(op, "padding " + o.padding.to_string() + " must be between 0 and half the kernel " +
                 o.kernel.to_string());
  }
  Pool2dGeometry g;
  g.batch = x[0];
  g.channels = x[1];
  g.in_h = x[2];
  g.in_w = x[3];
  g.kernel_h = o.kernel.h;
  g.kernel_w = o.kernel.w;
  g.stride_h = stride.h;
  g.stride_w = stride.w;
  g.pad_h = o.padding.h;
  g.pad_w = o.padding.w;
  g.count_include_pad = o.count_include_pad;
  if (g.in_h + 2 * g.pad_h < g.kernel_h || g.in_w + 2 * g.pad_w < g.kernel_w) {
    fail(op, "kernel " + o.kernel.to_string() + " is larger than the padded input (" +
                 std::to_string(g.in_h + 2 * g.pad_h) + "x" + std::to_string(g.in_w + 2 * g.pad_w) +
                 ": x shape " + x.to_string() + ", padding " + o.padding.to_string() + ")");
  }
  g.out_h = (g.in_h + 2 * g.pad_h - g.kernel_h) / g.stride_h + 1;
  g.out_w = (g.in_w + 2 * g.pad_w - g.kernel_w) / g.stride_w + 1;
  return g;
}

Shape output_shape(const Pool2dGeometry& g) {
  return Shape{g.batch, g.channels, g.out_h, g.out_w};
}

NDArray dense(const NDArray& array) {
  return array.is_contiguous() ? array : array.copy();
}

struct PoolAttrs {
  Pool2dOptions options;
  bool max;
  bool global;  // global_avg_pool2d: the options come from x's shape
};

// The pooling rule: max pooling saves x (to find each window's maximum again), average
// pooling only x's shape.
detail::OpGradient pool_gradient(const detail::OpCall& c) {
  const NDArray& x = *c.inputs[0];
  const PoolAttrs& attrs = detail::attrs_of<PoolAttrs>(c);
  detail::OpGradient gradient;
  gradient.inputs = {x};
  gradient.saved = {attrs.max ? x : NDArray()};
  gradient.rule = [max = attrs.max, options = attrs.options, shape = x.shape()](
                      const std::vector<NDArray>& g, const std::vector<NDArray>& saved) {
    return std::vector<NDArray>{max ? max_pool2d_backward(g[0], saved[0], options)
                                    : avg_pool2d_backward(g[0], shape, options)};
  };
  return gradient;
}

void write_pool_attrs(const detail::OpCall& c, detail::OpAttrWriter& out) {
  const PoolAttrs& attrs = detail::attrs_of<PoolAttrs>(c);
  if (attrs.global) return;
  detail::write_size2d(out, "kernel", attrs.options.kernel);
  detail::write_size2d(out, "stride", attrs.options.stride);
  detail::write_size2d(out, "padding", attrs.options.padding);
  out.boolean("count_include_pad", attrs.options.count_include_pad);
}

Pool2dOptions read_pool_options(const detail::OpAttrReader& attrs) {
  return Pool2dOptions{.kernel = detail::read_size2d(attrs, "kernel", "pool2d"),
                       .stride = detail::read_size2d(attrs, "stride", "pool2d"),
                       .padding = detail::read_size2d(attrs, "padding", "pool2d"),
                       .count_include_pad = attrs.boolean("count_include_pad")};
}

const detail::OpDefinition kMaxPool2d{
    .name = "max_pool2d",
    .write_attrs = write_pool_attrs,
    .import =
        [](const detail::OpAttrReader& attrs, const std::vector<NDArray>& in) {
          return max_pool2d(in[0], read_pool_options(attrs));
        },
    .gradient = pool_gradient,
    .examples =
        [] {
          return std::vector<detail::OpExample>{detail::example_of_one(
              "kernel 2", Shape{2, 2, 4, 4},
              [](const NDArray& x) { return max_pool2d(x, Pool2dOptions{.kernel = Size2d{2}}); })};
        }};
const detail::OpDefinition kAvgPool2d{
    .name = "avg_pool2d",
    .write_attrs = write_pool_attrs,
    .import =
        [](const detail::OpAttrReader& attrs, const std::vector<NDArray>& in) {
          return avg_pool2d(in[0], read_pool_options(attrs));
        },
    .gradient = pool_gradient,
    .examples =
        [] {
          return std::vector<detail::OpExample>{detail::example_of_one(
              "kernel 3, stride 1, padding 1, padding not counted", Shape{2, 2, 4, 4},
              [](const NDArray& x) {
                return avg_pool2d(x, Pool2dOptions{.kernel = Size2d{3},
                                                   .stride = Size2d{1},
                                                   .padding = Size2d{1},
                                                   .count_include_pad = false});
              })};
        }};
const detail::OpDefinition kGlobalAvgPool2d{
    .name = "global_avg_pool2d",
    .write_attrs = write_pool_attrs,
    .import = [](const detail::OpAttrReader&,
                 const std::vector<NDArray>& in) { return global_avg_pool2d(in[0]); },
    .gradient = pool_gradient,
    .examples =
        [] {
          return std::vector<detail::OpExample>{
              detail::example_of_one("(2, 3, 4, 5)", Shape{2, 3, 4, 5},
                                     [](const NDArray& x) { return global_avg_pool2d(x); })};
        }};

NDArray pool_forward(const detail::OpDefinition& definition, const NDArray& x,
                     const PoolAttrs& attrs) {
  const char* op = definition.name;
  Pool2dGeometry g;
  return detail::invoke(
      definition, {&x}, &attrs,
      [&] {
        detail::check_defined(op, x);
        detail::check_floating(op, x.dtype());
        g = geometry(op, x.shape(), attrs.options);
        return detail::OpPlan{&x.engine(), output_shape(g), x.dtype(), x.device()};
      },
      [&](detail::OpOutput& o) {
        const NDArray dx = dense(x);  // the dense copy: no node
        detail::push_view_op<2>(
            x.engine(), o.out.device(), op, {detail::lazy_view(dx), detail::lazy_view(o.out)},
            {dx.var()}, {o.out.var()},
            [g, max = attrs.max](const ops::Kernels& k, Stream* s, const auto& v) {
              (max ? k.max_pool2d : k.avg_pool2d)(s, v[0], v[1], g);
            });
      });
}

void check_grad_shape(const char* op, const NDArray& grad_out, const Pool2dGeometry& g) {
  if (grad_out.shape() != output_shape(g)) {
    fail(op, "grad_out must have the forward output's shape " + output_shape(g).to_string() +
                 ", got " + grad_out.shape().to_string());
  }
}

Pool2dOptions global_options(const char* op, const Shape& x) {
  if (x.ndim() != 4) fail(op, "x must be 4-D (N, C, H, W), got shape " + x.to_string());
  if (x[2] < 1 || x[3] < 1) fail(op, "x must have H, W >= 1, got shape " + x.to_string());
  return Pool2dOptions{.kernel = {x[2], x[3]}};
}

}  // namespace

Shape pool2d_output_shape(const Shape& x, const Pool2dOptions& options) {
  return output_shape(geometry("pool2d", x, options));
}

namespace detail {
TANDEM_OP_DEFINITIONS(pooling, &kMaxPool2d, &kAvgPool2d, &kGlobalAvgPool2d)
}  // namespace detail

NDArray max_pool2d(const NDArray& x, const Pool2dOptions& options) {
  return pool_forward(kMaxPool2d, x, PoolAttrs{options, true, false});
}

NDArray avg_pool2d(const NDArray& x, const Pool2dOptions& options) {
  return pool_forward(kAvgPool2d, x, PoolAttrs{options, false, false});
}

NDArray global_avg_pool2d(const NDArray& x) {
  detail::check_defined("global_avg_pool2d", x);
  return pool_forward(kGlobalAvgPool2d, x,
                      PoolAttrs{global_options("global_avg_pool2d", x.shape()), false, true});
}

NDArray max_pool2d_backward(const NDArray& grad_out, const NDArray& x,
                            const Pool2dOptions& options) {
  const char* op = "max_pool2d_backward";
  Engine& engine = detail::check_same_place(op, {&grad_out, &x});
  detail::check_floating(op, x.dtype());
  detail::check_same_dtype(op, grad_out, x);
  const Pool2dGeometry g = geometry(op, x.shape(), options);
  check_grad_shape(op, grad_out, g);
  NDArray out = detail::allocate_array(engine, x.shape(), x.dtype(), x.device(), op);
  const NDArray dx = dense(x), dy = dense(grad_out);
  detail::push_view_op<3>(engine, out.device(), op,
                          {detail::lazy_view(dx), detail::lazy_view(dy), detail::lazy_view(out)},
                          {dx.var(), dy.var()}, {out.var()},
                          [g](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.max_pool2d_backward(s, v[0], v[1], v[2], g);
                          });
  return out;
}

NDArray avg_pool2d_backward(const NDArray& grad_out, const Shape& input_shape,
                            const Pool2dOptions& options) {
  const char* op = "avg_pool2d_backward";
  detail::check_defined(op, grad_out);
  detail::check_floating(op, grad_out.dtype());
  const Pool2dGeometry g = geometry(op, input_shape, options);
  check_grad_shape(op, grad_out, g);
  NDArray out = detail::allocate_array(grad_out.engine(), input_shape, grad_out.dtype(),
                                       grad_out.device(), op);
  const NDArray dy = dense(grad_out);
  detail::push_view_op<2>(grad_out.engine(), out.device(), op,
                          {detail::lazy_view(dy), detail::lazy_view(out)}, {dy.var()}, {out.var()},
                          [g](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.avg_pool2d_backward(s, v[0], v[1], g);
                          });
  return out;
}

NDArray global_avg_pool2d_backward(const NDArray& grad_out, const Shape& input_shape) {
  return avg_pool2d_backward(grad_out, input_shape,
                             global_options("global_avg_pool2d_backward", input_shape));
}

}  // namespace tandem::nd
