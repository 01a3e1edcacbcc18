// Pushing element-wise kernels, one op per call on any device (kernels.h). Dense operands of one
// shape take a compact op (storage pointers, offsets and a count: it fits inline in the engine's
// op record, so pushing it allocates nothing); anything else (broadcasting, strided views)
// carries full lazy views.
#include <array>

#include "core/elementwise_push.h"
#include "core/kernels.h"
#include "core/lazy_view.h"

namespace tandem::nd::detail {

namespace {

bool dense_like(const NDArray& array, const NDArray& out) {
  return array.shape() == out.shape() && array.is_contiguous();
}

// A dense element-wise op on at most this many elements costs less than handing it to an engine
// worker (a hand-off and a wake-up, about a microsecond on 2 cores): it asks the engine to run it
// on the pushing thread when its inputs are ready (OpProps::inline_when_ready).
constexpr std::int64_t kInlineElements = 4096;

bool cheap(const NDArray& out) {
  return out.size() <= kInlineElements;
}

}  // namespace

void push_binary(ops::BinaryOp op, const NDArray& a, const NDArray& b, const NDArray& out) {
  const char* name = ops::op_name(op);
  if (dense_like(a, out) && dense_like(b, out) && out.is_contiguous()) {
    const DType dtype = out.dtype();
    const DenseRef ra = dense_ref(a), rb = dense_ref(b), ro = dense_ref(out);
    const std::int64_t n = out.size();
    out.engine().push(
        [op, dtype, ra, rb, ro, n](RunContext& ctx) {
          kernels(ctx).binary_dense(ctx.stream(), op, dtype, ra.resolve(), rb.resolve(),
                                    ro.resolve(), n);
        },
        out.device(), {a.var(), b.var()}, {out.var()},
        {.name = name, .inline_when_ready = cheap(out)});
    return;
  }
  std::array<LazyView, 3> views{lazy_broadcast(a, out.shape()), lazy_broadcast(b, out.shape()),
                                lazy_view(out)};
  out.engine().push(
      [op, views](RunContext& ctx) {
        kernels(ctx).binary(ctx.stream(), op, views[0].resolve(), views[1].resolve(),
                            views[2].resolve());
      },
      out.device(), {a.var(), b.var()}, {out.var()}, {.name = name});
}

void push_binary_scalar(ops::BinaryOp op, const NDArray& a, double scalar, bool scalar_first,
                        const NDArray& out) {
  const char* name = ops::op_name(op);
  if (dense_like(a, out) && out.is_contiguous()) {
    const DType dtype = out.dtype();
    const DenseRef ra = dense_ref(a), ro = dense_ref(out);
    const std::int64_t n = out.size();
    out.engine().push(
        [op, dtype, ra, scalar, scalar_first, ro, n](RunContext& ctx) {
          kernels(ctx).binary_scalar_dense(ctx.stream(), op, dtype, ra.resolve(), scalar,
                                           scalar_first, ro.resolve(), n);
        },
        out.device(), {a.var()}, {out.var()}, {.name = name, .inline_when_ready = cheap(out)});
    return;
  }
  std::array<LazyView, 2> views{lazy_broadcast(a, out.shape()), lazy_view(out)};
  out.engine().push(
      [op, views, scalar, scalar_first](RunContext& ctx) {
        kernels(ctx).binary_scalar(ctx.stream(), op, views[0].resolve(), scalar, scalar_first,
                                   views[1].resolve());
      },
      out.device(), {a.var()}, {out.var()}, {.name = name});
}

void push_unary(ops::UnaryOp op, const NDArray& in, const NDArray& out) {
  const char* name = ops::op_name(op);
  if (dense_like(in, out) && out.is_contiguous()) {
    const DType dtype = out.dtype();
    const DenseRef ri = dense_ref(in), ro = dense_ref(out);
    const std::int64_t n = out.size();
    out.engine().push(
        [op, dtype, ri, ro, n](RunContext& ctx) {
          kernels(ctx).unary_dense(ctx.stream(), op, dtype, ri.resolve(), ro.resolve(), n);
        },
        out.device(), {in.var()}, {out.var()}, {.name = name, .inline_when_ready = cheap(out)});
    return;
  }
  std::array<LazyView, 2> views{lazy_broadcast(in, out.shape()), lazy_view(out)};
  out.engine().push(
      [op, views](RunContext& ctx) {
        kernels(ctx).unary(ctx.stream(), op, views[0].resolve(), views[1].resolve());
      },
      out.device(), {in.var()}, {out.var()}, {.name = name});
}

void push_copy(const NDArray& in, const NDArray& out, const char* op) {
  std::array<LazyView, 2> views{lazy_broadcast(in, out.shape()), lazy_view(out)};
  out.engine().push(
      [views](RunContext& ctx) {
        kernels(ctx).copy(ctx.stream(), views[0].resolve(), views[1].resolve());
      },
      out.device(), WriteReads(out, &in).list(), {out.var()}, {.name = op});
}

void push_fill(const NDArray& out, double value, const char* op) {
  const LazyView view = lazy_view(out);
  out.engine().push(
      [view, value](RunContext& ctx) { kernels(ctx).fill(ctx.stream(), view.resolve(), value); },
      out.device(), WriteReads(out).list(), {out.var()}, {.name = op});
}

}  // namespace tandem::nd::detail
