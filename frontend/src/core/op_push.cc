#include "core/op_push.h"

#include "core/kernels.h"

namespace tandem::nd::detail {

void push_reduce_all(ops::ReduceOp op, const NDArray& x, const NDArray& out) {
  const LazyView in = lazy_view(x);
  const DenseRef result = dense_ref(out);
  const DType dtype = out.dtype();
  out.engine().push(
      [op, in, result, dtype](RunContext& ctx) {
        kernels(ctx).reduce_all(ctx.stream(), op, in.resolve(),
                                ops::contiguous_view(result.resolve(), dtype, Shape{1}));
      },
      out.device(), {x.var()}, {out.var()}, {.name = ops::op_name(op)});
}

void push_reduce_axis(ops::ReduceOp op, const NDArray& x, int axis, const NDArray& out) {
  const LazyView in = lazy_view(x);
  // The kernel writes the dense result as the reduced shape; keepdims only adds a 1.
  LazyView result = lazy_view(out);
  result.layout = ops::contiguous_view(nullptr, out.dtype(), x.shape().without_axis(axis));
  out.engine().push(
      [op, in, axis, result](RunContext& ctx) {
        kernels(ctx).reduce_axis(ctx.stream(), op, in.resolve(), axis, result.resolve());
      },
      out.device(), {x.var()}, {out.var()}, {.name = ops::op_name(op)});
}

void push_dot(const NDArray& a, const NDArray& b, const NDArray& out, const LazyView& va,
              const LazyView& vb, const LazyView& vc, bool accumulate) {
  // Accumulating reads c too: writing its var gives the op c alone, after every earlier op on it.
  out.engine().push(
      [va, vb, vc, accumulate](RunContext& ctx) {
        kernels(ctx).gemm(ctx.stream(), va.resolve(), vb.resolve(), vc.resolve(), accumulate);
      },
      out.device(), {a.var(), b.var()}, {out.var()}, {.name = accumulate ? "dot_add" : "dot"});
}

void push_copies(std::vector<std::pair<LazyView, LazyView>> copies, VarList reads,
                 const NDArray& out, const char* op) {
  out.engine().push(
      [copies = std::move(copies)](RunContext& ctx) {
        const ops::Kernels& table = kernels(ctx);
        for (const auto& [from, to] : copies)
          table.copy(ctx.stream(), from.resolve(), to.resolve());
      },
      out.device(), reads, {out.var()}, {.name = op});
}

}  // namespace tandem::nd::detail
