// Reductions on the CPU. Whole-array reductions split the row-major order into fixed blocks,
// reduce each block serially and merge the partial results in block order. Axis reductions run
// one of two loop orders with the same per-element arithmetic (identity, then inputs in axis
// order), so both give identical bits:
// - along a unit-stride axis: for each output element, walk the axis;
// - otherwise: for a block of output elements, walk the axis in the outer loop and stream over
//   the block inside (rows of a row-major matrix, not columns).
#include "tandem/ops/cpu/reduce.h"

#include <string>
#include <vector>

#include "common/reduce_checks.h"
#include "common/strided_loop.h"
#include "parallel.h"
#include "reducers.h"
#include "tandem/errors.h"

namespace tandem::ops::cpu {

namespace {

constexpr std::int64_t kReduceBlock = 32 * 1024;
constexpr std::int64_t kOutputBlock = 2048;

template <class Fn>
decltype(auto) dispatch_reducer(ReduceOp op, DType dtype, Fn&& fn) {
  return dispatch_dtype(dtype, [&]<class T>(T) {
    switch (op) {
      case ReduceOp::sum:
        return fn(T{}, SumReducer<T>{});
      case ReduceOp::mean:
        return fn(T{}, MeanReducer<T>{});
      case ReduceOp::max:
        return fn(T{}, ExtremeReducer<T, true>{});
      case ReduceOp::min:
        return fn(T{}, ExtremeReducer<T, false>{});
      case ReduceOp::argmax:
        return fn(T{}, ArgmaxReducer<T>{});
      case ReduceOp::norm:
        break;
    }
    return fn(T{}, NormReducer<T>{});
  });
}

template <class Out, class T, class R>
void reduce_all_typed(const ArrayView& in, const ArrayView& out) {
  using Acc = typename R::Acc;
  const auto layout = make_layout<1>(in.shape, {&in.strides});
  const T* src = in.typed<const T>();
  const std::int64_t s = layout.inner_stride(0);
  const std::int64_t n = layout.num_elements();
  std::vector<Acc> partial(static_cast<std::size_t>(num_blocks(n, kReduceBlock)), R::identity());
  parallel_blocks(n, kReduceBlock, [&](std::int64_t block, std::int64_t begin, std::int64_t end) {
    Acc acc = R::identity();
    std::int64_t index = begin;
    for_each_run(layout, begin, end, [&](const auto& off, std::int64_t count) {
      const T* p = src + off[0];
      for (std::int64_t i = 0; i < count; ++i) R::add(acc, p[i * s], index + i);
      index += count;
    });
    partial[static_cast<std::size_t>(block)] = acc;
  });
  Acc total = R::identity();
  for (const Acc& acc : partial) R::merge(total, acc);
  *out.typed<Out>() = R::template finish<Out>(total, n);
}

template <class Out, class T, class R>
void reduce_axis_typed(const ArrayView& in, int axis, const ArrayView& out) {
  using Acc = typename R::Acc;
  const std::int64_t length = in.shape[axis];
  const std::int64_t axis_stride = in.strides[static_cast<std::size_t>(axis)];
  Strides outer_strides{};
  for (int i = 0, j = 0; i < in.ndim(); ++i) {
    if (i != axis)
      outer_strides[static_cast<std::size_t>(j++)] = in.strides[static_cast<std::size_t>(i)];
  }
  const auto layout = make_layout<2>(out.shape, {&outer_strides, &out.strides});
  const T* src = in.typed<const T>();
  Out* dst = out.typed<Out>();
  const std::int64_t si = layout.inner_stride(0), so = layout.inner_stride(1);
  const std::int64_t n_out = layout.num_elements();

  if (axis_stride == 1 || si != 1 || length <= 1) {
    const std::int64_t block =
        std::max<std::int64_t>(1, kReduceBlock / std::max<std::int64_t>(1, length));
    parallel_blocks(n_out, block, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      for_each_run(layout, begin, end, [&](const auto& off, std::int64_t count) {
        for (std::int64_t j = 0; j < count; ++j) {
          const T* p = src + off[0] + j * si;
          Acc acc = R::identity();
          for (std::int64_t k = 0; k < length; ++k) R::add(acc, p[k * axis_stride], k);
          dst[off[1] + j * so] = R::template finish<Out>(acc, length);
        }
      });
    });
    return;
  }
  parallel_blocks(n_out, kOutputBlock, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
    std::vector<Acc> acc(static_cast<std::size_t>(end - begin), R::identity());
    for (std::int64_t k = 0; k < length; ++k) {
      std::size_t slot = 0;
      for_each_run(layout, begin, end, [&](const auto& off, std::int64_t count) {
        const T* p = src + off[0] + k * axis_stride;
        for (std::int64_t j = 0; j < count; ++j)
          R::add(acc[slot + static_cast<std::size_t>(j)], p[j * si], k);
        slot += static_cast<std::size_t>(count);
      });
    }
    std::size_t slot = 0;
    for_each_run(layout, begin, end, [&](const auto& off, std::int64_t count) {
      for (std::int64_t j = 0; j < count; ++j) {
        dst[off[1] + j * so] =
            R::template finish<Out>(acc[slot + static_cast<std::size_t>(j)], length);
      }
      slot += static_cast<std::size_t>(count);
    });
  });
}

}  // namespace

void reduce_all(ReduceOp op, const ArrayView& in, const ArrayView& out) {
  check_reduce_dtypes(op, in, out);
  dispatch_reducer(op, in.dtype, [&]<class T, class R>(T, R) {
    if (op == ReduceOp::argmax) {
      reduce_all_typed<std::int64_t, T, R>(in, out);
    } else {
      reduce_all_typed<T, T, R>(in, out);
    }
  });
}

void reduce_axis(ReduceOp op, const ArrayView& in, int axis, const ArrayView& out) {
  check_reduce_dtypes(op, in, out);
  dispatch_reducer(op, in.dtype, [&]<class T, class R>(T, R) {
    if (op == ReduceOp::argmax) {
      reduce_axis_typed<std::int64_t, T, R>(in, axis, out);
    } else {
      reduce_axis_typed<T, T, R>(in, axis, out);
    }
  });
}

}  // namespace tandem::ops::cpu
