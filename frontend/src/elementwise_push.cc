// Pushing element-wise kernels. Dense operands of one shape take a compact op (storage pointers,
// offsets and a count: it fits inline in the engine's op record, so pushing it allocates
// nothing); anything else (broadcasting, strided views) carries full lazy views.
//
// On an accelerator the same two shapes of op resolve their memory at launch and enqueue the
// kernel on the op's stream (device_kernel.h); the CPU closures are untouched by that path.
#include <array>

#include "device_kernel.h"
#include "elementwise.h"
#include "lazy_view.h"
#include "tandem/ops/cpu/copy.h"
#include "tandem/ops/cpu/elementwise.h"
#include "tandem/ops/cuda/copy.h"
#include "tandem/ops/cuda/elementwise.h"

namespace tandem::nd::detail {

namespace {

bool dense_like(const NDArray& array, const NDArray& out) {
  return array.shape() == out.shape() && array.is_contiguous();
}

// A few operations per element for transcendental functions, one for the rest.
double unary_flops(ops::UnaryOp op) {
  switch (op) {
    case ops::UnaryOp::exp:
    case ops::UnaryOp::log:
    case ops::UnaryOp::sigmoid:
    case ops::UnaryOp::tanh:
      return 8.0;
    default:
      return 1.0;
  }
}

void push_binary_on_accelerator(ops::BinaryOp op, const NDArray& a, const NDArray& b,
                                const NDArray& out) {
  std::array<LazyView, 3> views{lazy_broadcast(a, out.shape()), lazy_broadcast(b, out.shape()),
                                lazy_view(out)};
  const WorkCost cost = elementwise_cost(out.size(), out.dtype(), 3);
  out.engine().push(
      [op, views, cost](RunContext& ctx) {
        const ops::ArrayView va = views[0].resolve(), vb = views[1].resolve(),
                             vo = views[2].resolve();
        enqueue_kernel(
            ctx, cost, [op, va, vb, vo] { ops::cpu::binary(op, va, vb, vo); },
            [&](Stream& stream) { ops::cuda::binary(op, va, vb, vo, stream); });
      },
      out.device(), {a.var(), b.var()}, {out.var()}, {.name = ops::op_name(op)});
}

void push_binary_scalar_on_accelerator(ops::BinaryOp op, const NDArray& a, double scalar,
                                       bool scalar_first, const NDArray& out) {
  std::array<LazyView, 2> views{lazy_broadcast(a, out.shape()), lazy_view(out)};
  const WorkCost cost = elementwise_cost(out.size(), out.dtype(), 2);
  out.engine().push(
      [op, views, scalar, scalar_first, cost](RunContext& ctx) {
        const ops::ArrayView va = views[0].resolve(), vo = views[1].resolve();
        enqueue_kernel(
            ctx, cost,
            [op, va, scalar, scalar_first, vo] {
              ops::cpu::binary_scalar(op, va, scalar, scalar_first, vo);
            },
            [&](Stream& stream) {
              ops::cuda::binary_scalar(op, va, scalar, scalar_first, vo, stream);
            });
      },
      out.device(), {a.var()}, {out.var()}, {.name = ops::op_name(op)});
}

void push_unary_on_accelerator(ops::UnaryOp op, const NDArray& in, const NDArray& out) {
  std::array<LazyView, 2> views{lazy_broadcast(in, out.shape()), lazy_view(out)};
  const WorkCost cost = elementwise_cost(out.size(), out.dtype(), 2, unary_flops(op));
  out.engine().push(
      [op, views, cost](RunContext& ctx) {
        const ops::ArrayView vi = views[0].resolve(), vo = views[1].resolve();
        enqueue_kernel(
            ctx, cost, [op, vi, vo] { ops::cpu::unary(op, vi, vo); },
            [&](Stream& stream) { ops::cuda::unary(op, vi, vo, stream); });
      },
      out.device(), {in.var()}, {out.var()}, {.name = ops::op_name(op)});
}

}  // namespace

void push_binary(ops::BinaryOp op, const NDArray& a, const NDArray& b, const NDArray& out) {
  if (out.device().is_accelerator()) return push_binary_on_accelerator(op, a, b, out);
  const char* name = ops::op_name(op);
  if (dense_like(a, out) && dense_like(b, out) && out.is_contiguous()) {
    const DType dtype = out.dtype();
    const DenseRef ra = dense_ref(a), rb = dense_ref(b), ro = dense_ref(out);
    const std::int64_t n = out.size();
    out.engine().push(
        [op, dtype, ra, rb, ro, n] {
          ops::cpu::binary_dense(op, dtype, ra.resolve(), rb.resolve(), ro.resolve(), n);
        },
        out.device(), {a.var(), b.var()}, {out.var()}, {.name = name});
    return;
  }
  std::array<LazyView, 3> views{lazy_broadcast(a, out.shape()), lazy_broadcast(b, out.shape()),
                                lazy_view(out)};
  out.engine().push(
      [op, views] {
        ops::cpu::binary(op, views[0].resolve(), views[1].resolve(), views[2].resolve());
      },
      out.device(), {a.var(), b.var()}, {out.var()}, {.name = name});
}

void push_binary_scalar(ops::BinaryOp op, const NDArray& a, double scalar, bool scalar_first,
                        const NDArray& out) {
  if (out.device().is_accelerator()) {
    return push_binary_scalar_on_accelerator(op, a, scalar, scalar_first, out);
  }
  const char* name = ops::op_name(op);
  if (dense_like(a, out) && out.is_contiguous()) {
    const DType dtype = out.dtype();
    const DenseRef ra = dense_ref(a), ro = dense_ref(out);
    const std::int64_t n = out.size();
    out.engine().push(
        [op, dtype, ra, scalar, scalar_first, ro, n] {
          ops::cpu::binary_scalar_dense(op, dtype, ra.resolve(), scalar, scalar_first, ro.resolve(),
                                        n);
        },
        out.device(), {a.var()}, {out.var()}, {.name = name});
    return;
  }
  std::array<LazyView, 2> views{lazy_broadcast(a, out.shape()), lazy_view(out)};
  out.engine().push(
      [op, views, scalar, scalar_first] {
        ops::cpu::binary_scalar(op, views[0].resolve(), scalar, scalar_first, views[1].resolve());
      },
      out.device(), {a.var()}, {out.var()}, {.name = name});
}

void push_unary(ops::UnaryOp op, const NDArray& in, const NDArray& out) {
  if (out.device().is_accelerator()) return push_unary_on_accelerator(op, in, out);
  const char* name = ops::op_name(op);
  if (dense_like(in, out) && out.is_contiguous()) {
    const DType dtype = out.dtype();
    const DenseRef ri = dense_ref(in), ro = dense_ref(out);
    const std::int64_t n = out.size();
    out.engine().push(
        [op, dtype, ri, ro, n] { ops::cpu::unary_dense(op, dtype, ri.resolve(), ro.resolve(), n); },
        out.device(), {in.var()}, {out.var()}, {.name = name});
    return;
  }
  std::array<LazyView, 2> views{lazy_broadcast(in, out.shape()), lazy_view(out)};
  out.engine().push([op, views] { ops::cpu::unary(op, views[0].resolve(), views[1].resolve()); },
                    out.device(), {in.var()}, {out.var()}, {.name = name});
}

void push_copy(const NDArray& in, const NDArray& out, const char* op) {
  std::array<LazyView, 2> views{lazy_broadcast(in, out.shape()), lazy_view(out)};
  if (out.device().is_accelerator()) {
    const WorkCost cost = elementwise_cost(out.size(), out.dtype(), 2, 0.0);
    out.engine().push(
        [views, cost](RunContext& ctx) {
          const ops::ArrayView vi = views[0].resolve(), vo = views[1].resolve();
          enqueue_kernel(
              ctx, cost, [vi, vo] { ops::cpu::copy(vi, vo); },
              [&](Stream& stream) { ops::cuda::copy(vi, vo, stream); });
        },
        out.device(), WriteReads(out, &in).list(), {out.var()}, {.name = op});
    return;
  }
  out.engine().push([views] { ops::cpu::copy(views[0].resolve(), views[1].resolve()); },
                    out.device(), WriteReads(out, &in).list(), {out.var()}, {.name = op});
}

void push_fill(const NDArray& out, double value, const char* op) {
  const LazyView view = lazy_view(out);
  if (out.device().is_accelerator()) {
    const WorkCost cost = elementwise_cost(out.size(), out.dtype(), 1, 0.0);
    out.engine().push(
        [view, value, cost](RunContext& ctx) {
          const ops::ArrayView vo = view.resolve();
          enqueue_kernel(
              ctx, cost, [vo, value] { ops::cpu::fill(vo, value); },
              [&](Stream& stream) { ops::cuda::fill(vo, value, stream); });
        },
        out.device(), WriteReads(out).list(), {out.var()}, {.name = op});
    return;
  }
  out.engine().push([view, value] { ops::cpu::fill(view.resolve(), value); }, out.device(),
                    WriteReads(out).list(), {out.var()}, {.name = op});
}

}  // namespace tandem::nd::detail
