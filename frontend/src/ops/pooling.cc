// Max, average and global average pooling and their gradients: every check at the call, then
// one queued kernel per op.
#include "tandem/nd/pooling.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/modes.h"
#include "core/view_op.h"
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

// The pooling rule: max pooling saves x (to find each window's maximum again), average
// pooling only x's shape.
detail::OpGradient pool_gradient(bool max, const NDArray& x, const Pool2dOptions& options) {
  detail::OpGradient gradient;
  gradient.inputs = {x};
  gradient.saved = {max ? x : NDArray()};
  gradient.rule = [=, shape = x.shape()](const std::vector<NDArray>& g,
                                         const std::vector<NDArray>& saved) {
    return std::vector<NDArray>{max ? max_pool2d_backward(g[0], saved[0], options)
                                    : avg_pool2d_backward(g[0], shape, options)};
  };
  return gradient;
}

NDArray pool_forward(const char* op, bool max, const NDArray& x, const Pool2dOptions& options) {
  detail::check_defined(op, x);
  detail::check_floating(op, x.dtype());
  const Pool2dGeometry g = geometry(op, x.shape(), options);
  const bool record = detail::gradient_wanted({&x});
  const detail::OpModesPaused paused;  // the dense copy: no node
  NDArray out = detail::allocate_array(x.engine(), output_shape(g), x.dtype(), x.device(), op);
  const NDArray dx = dense(x);
  detail::push_view_op<2>(x.engine(), out.device(), op,
                          {detail::lazy_view(dx), detail::lazy_view(out)}, {dx.var()}, {out.var()},
                          [g, max](const ops::Kernels& k, Stream* s, const auto& v) {
                            (max ? k.max_pool2d : k.avg_pool2d)(s, v[0], v[1], g);
                          });
  if (paused.any()) {
    detail::OpCall call = detail::OpCall::of(detail::OpForm::pool, op, x, out);
    call.pool = &options;
    const detail::OpGradient gradient =
        record ? pool_gradient(max, x, options) : detail::OpGradient{};
    if (record) call.gradient = &gradient;
    paused.report(call);
  }
  return out;
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

NDArray max_pool2d(const NDArray& x, const Pool2dOptions& options) {
  return pool_forward("max_pool2d", true, x, options);
}

NDArray avg_pool2d(const NDArray& x, const Pool2dOptions& options) {
  return pool_forward("avg_pool2d", false, x, options);
}

NDArray global_avg_pool2d(const NDArray& x) {
  detail::check_defined("global_avg_pool2d", x);
  return pool_forward("global_avg_pool2d", false, x,
                      global_options("global_avg_pool2d", x.shape()));
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
