// Reductions on a gpu(i). reduce_all is one CUB DeviceReduce::Reduce; reduce_axis is one CUB
// DeviceSegmentedReduce::Reduce with a segment per output element, or, for a dense input with
// elements after the axis, the columns kernel (common/reduce_plan.h). CUB reads a dense input
// through its pointer (vectorised loads) where the element is its own accumulator form, and any
// other view through a transform iterator that maps a flat index to the element of the strided
// view (and to its accumulator form), so no dense copy is made. CUB writes accumulators to
// scratch memory; a finishing kernel converts them (mean divides, norm takes the root) into the
// strided output.
//
// The rules are those of ops/src/cpu/reducers.h, restated for the device; CUB requires a
// commutative operator, so argmax breaks ties by the smaller index instead of by order.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>

#include <cmath>
#include <limits>
#include <type_traits>

#include "common/reduce_checks.h"
#include "common/reduce_plan.h"
#include "launch.cuh"
#include "tandem/ops/convert.h"
#include "tandem/ops/cuda/reduce.h"
#include "tandem/ops/functors.h"

namespace tandem::ops::cuda {

namespace {

template <class T>
struct SumRule {
  using Acc = AccumulatorType<T>;
  // lift() is a conversion: CUB may read the elements themselves (see reduce_all_typed).
  static constexpr bool kLiftConverts = true;
  __host__ __device__ static Acc identity() { return Acc(0); }
  __host__ __device__ static Acc lift(T value, std::int64_t) { return static_cast<Acc>(value); }
  __host__ __device__ Acc operator()(const Acc& a, const Acc& b) const {
    return functors::wrapping_add(a, b);
  }
  template <class Out>
  __host__ __device__ static Out finish(const Acc& acc, std::int64_t) {
    return convert<Out>(acc);
  }
};

template <class T>
struct MeanRule : SumRule<T> {
  using Acc = AccumulatorType<T>;
  template <class Out>
  __host__ __device__ static Out finish(const Acc& acc, std::int64_t count) {
    if constexpr (std::is_integral_v<Acc>) {
      return convert<Out>(count == 0 ? Acc(0) : acc / count);
    } else {
      return convert<Out>(acc / static_cast<double>(count));
    }
  }
};

template <class T>
struct NormRule : SumRule<T> {
  using Acc = AccumulatorType<T>;
  static constexpr bool kLiftConverts = false;
  __host__ __device__ static Acc lift(T value, std::int64_t) {
    return static_cast<Acc>(value) * static_cast<Acc>(value);
  }
  template <class Out>
  __host__ __device__ static Out finish(const Acc& acc, std::int64_t) {
    return convert<Out>(std::sqrt(static_cast<double>(acc)));
  }
};

// a replaces b as the running extreme; a NaN replaces any number and is never replaced.
template <class T, bool kMax>
__host__ __device__ bool better(T a, T b) {
  if (b != b) return false;
  if (a != a) return true;
  return kMax ? a > b : a < b;
}

template <class T, bool kMax>
struct ExtremeRule {
  using Acc = T;
  static constexpr bool kLiftConverts = true;
  __host__ __device__ static Acc identity() {
    if constexpr (std::is_floating_point_v<T>) {
      return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    } else {
      return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
  }
  __host__ __device__ static Acc lift(T value, std::int64_t) { return value; }
  __host__ __device__ Acc operator()(const Acc& a, const Acc& b) const {
    return better<T, kMax>(b, a) ? b : a;
  }
  template <class Out>
  __host__ __device__ static Out finish(const Acc& acc, std::int64_t) {
    return convert<Out>(acc);
  }
};

template <class T>
struct ArgmaxAcc {
  T value;
  std::int64_t index;  // -1: nothing seen
};

template <class T>
struct ArgmaxRule {
  using Acc = ArgmaxAcc<T>;
  static constexpr bool kLiftConverts = false;
  __host__ __device__ static Acc identity() { return Acc{T(0), -1}; }
  __host__ __device__ static Acc lift(T value, std::int64_t index) { return Acc{value, index}; }
  // Commutative: the larger value wins (a NaN counts as largest), equal values (or two NaNs)
  // go to the smaller index: the first index of the maximum, as on the CPU.
  __host__ __device__ Acc operator()(const Acc& a, const Acc& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (better<T, true>(a.value, b.value)) return a;
    if (better<T, true>(b.value, a.value)) return b;
    return a.index <= b.index ? a : b;
  }
  template <class Out>
  __host__ __device__ static Out finish(const Acc& acc, std::int64_t) {
    return static_cast<Out>(acc.index);
  }
};

// Flat index -> accumulator of the element: reduce_all walks the view in row-major order.
template <class T, class Rule>
struct LoadAll {
  const T* data;
  StridedIndexer<1> indexer;
  __host__ __device__ typename Rule::Acc operator()(std::int64_t i) const {
    std::int64_t off[1];
    indexer.offsets(i, off);
    return Rule::lift(data[off[0]], i);
  }
};

// Flat index i = segment * length + k -> element k along the axis of output element `segment`.
template <class T, class Rule>
struct LoadAxis {
  const T* data;
  StridedIndexer<2> outer;  // operand 0: input offset of the segment; 1: output offset
  std::int64_t length;
  std::int64_t axis_stride;
  __host__ __device__ typename Rule::Acc operator()(std::int64_t i) const {
    const std::int64_t segment = i / length, k = i % length;
    std::int64_t off[2];
    outer.offsets(segment, off);
    return Rule::lift(data[off[0] + k * axis_stride], k);
  }
};

struct SegmentBoundary {
  std::int64_t length;
  __host__ __device__ std::int64_t operator()(std::int64_t segment) const {
    return segment * length;
  }
};

template <class Out, class Rule>
__global__ void finish_kernel(const typename Rule::Acc* acc, Out* out, StridedIndexer<2> outer,
                              std::int64_t segments, std::int64_t count) {
  for (std::int64_t j = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; j < segments;
       j += std::int64_t{blockDim.x} * gridDim.x) {
    std::int64_t off[2];
    outer.offsets(j, off);
    out[off[1]] = Rule::template finish<Out>(acc[j], count);
  }
}

template <class Fn>
decltype(auto) dispatch_rule(ReduceOp op, DType dtype, Fn&& fn) {
  return dispatch_dtype(dtype, [&]<class T>(T) {
    switch (op) {
      case ReduceOp::sum:
        return fn(T{}, SumRule<T>{});
      case ReduceOp::mean:
        return fn(T{}, MeanRule<T>{});
      case ReduceOp::max:
        return fn(T{}, ExtremeRule<T, true>{});
      case ReduceOp::min:
        return fn(T{}, ExtremeRule<T, false>{});
      case ReduceOp::argmax:
        return fn(T{}, ArgmaxRule<T>{});
      case ReduceOp::norm:
        break;
    }
    return fn(T{}, NormRule<T>{});
  });
}

constexpr std::size_t kAlign = 256;
std::size_t aligned(std::size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Scratch layout for both CUB paths: [accumulators | CUB temporary storage].
template <class Out, class Rule, class Input>
void reduce_all_from(Input input, std::int64_t n, const ArrayView& out, const Launch& launch) {
  using Acc = typename Rule::Acc;
  std::size_t temp_bytes = 0;
  check_cuda(cub::DeviceReduce::Reduce(nullptr, temp_bytes, input, static_cast<Acc*>(nullptr), n,
                                       Rule{}, Rule::identity(), launch.stream()),
             "reduce (cub::DeviceReduce::Reduce size query)", launch.device());
  const std::size_t acc_bytes = aligned(sizeof(Acc));
  Scratch scratch(launch, acc_bytes + temp_bytes);
  Acc* acc = scratch.as<Acc>();
  launch.library_call();
  check_cuda(cub::DeviceReduce::Reduce(scratch.as<void>(acc_bytes), temp_bytes, input, acc, n,
                                       Rule{}, Rule::identity(), launch.stream()),
             "reduce (cub::DeviceReduce::Reduce)", launch.device());
  // The single output element: a 1-element "segment" list at out.data.
  StridedIndexer<2> single;
  single.shape[0] = 1;
  finish_kernel<Out, Rule><<<1, 1, 0, launch.stream()>>>(acc, out.typed<Out>(), single, 1, n);
  launch.launched();
}

template <class Out, class T, class Rule>
void reduce_all_typed(const ArrayView& in, const ArrayView& out, const Launch& launch) {
  const std::int64_t n = in.num_elements();
  // A dense input whose elements are their own accumulator form (up to a conversion, which the
  // rule's operator makes): CUB reads it through the pointer, with vectorised loads.
  if constexpr (Rule::kLiftConverts) {
    if (in.is_contiguous()) return reduce_all_from<Out, Rule>(in.typed<const T>(), n, out, launch);
  }
  const auto indexer = make_indexer<1>(in.shape, {&in.strides});
  reduce_all_from<Out, Rule>(
      thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                      LoadAll<T, Rule>{in.typed<const T>(), indexer}),
      n, out, launch);
}

// The columns kernel (common/reduce_plan.h) over a dense (outer, length, inner) input: output
// element q = o * inner + j reduces x[o, k, j] over k. A block is 32 neighbouring q (threadIdx.x)
// by kColumnRows slices of k (threadIdx.y), each thread striding over its slice; blockIdx.y is
// the chunk of the axis, whose partial accumulator goes to partials[blockIdx.y * columns + q].
constexpr int kColumnWidth = 32;
constexpr int kColumnRows = kThreads / kColumnWidth;

template <class T, class Rule>
__global__ void columns_kernel(const T* x, typename Rule::Acc* partials, std::int64_t columns,
                               std::int64_t length, std::int64_t inner, std::int64_t chunk) {
  using Acc = typename Rule::Acc;
  __shared__ Acc slices[kColumnRows][kColumnWidth];
  const std::int64_t q = std::int64_t{blockIdx.x} * kColumnWidth + threadIdx.x;
  const std::int64_t begin = std::int64_t{blockIdx.y} * chunk;
  const std::int64_t end = begin + chunk < length ? begin + chunk : length;
  Acc acc = Rule::identity();
  if (q < columns) {
    const std::int64_t o = q / inner, j = q - o * inner;
    const T* column = x + o * length * inner + j;
    for (std::int64_t k = begin + threadIdx.y; k < end; k += kColumnRows) {
      acc = Rule{}(acc, Rule::lift(column[k * inner], k));
    }
  }
  slices[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && q < columns) {
    for (int r = 1; r < kColumnRows; ++r) acc = Rule{}(acc, slices[r][threadIdx.x]);
    partials[std::int64_t{blockIdx.y} * columns + q] = acc;
  }
}

// Combines each output element's chunks in chunk order and finishes it into the strided output.
template <class Out, class Rule>
__global__ void columns_finish_kernel(const typename Rule::Acc* partials, Out* out,
                                      StridedIndexer<1> out_index, std::int64_t columns,
                                      std::int64_t chunks, std::int64_t count) {
  for (std::int64_t q = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; q < columns;
       q += std::int64_t{blockDim.x} * gridDim.x) {
    typename Rule::Acc acc = partials[q];
    for (std::int64_t c = 1; c < chunks; ++c) acc = Rule{}(acc, partials[c * columns + q]);
    std::int64_t off[1];
    out_index.offsets(q, off);
    out[off[0]] = Rule::template finish<Out>(acc, count);
  }
}

template <class Out, class T, class Rule>
void reduce_columns(const ArrayView& in, int axis, const ArrayView& out, const Launch& launch) {
  using Acc = typename Rule::Acc;
  const AxisSplit split = split_at_axis(in.shape, axis);
  const std::int64_t columns = split.outer * split.inner;
  const std::int64_t column_blocks = (columns + kColumnWidth - 1) / kColumnWidth;
  // Enough chunks of the axis to fill the device (max_grid_blocks() blocks in all), each at
  // least kMinPerThread elements per thread, at most 65535 (the grid's y limit).
  constexpr std::int64_t kMinPerThread = 4;
  const std::int64_t most_chunks =
      std::clamp<std::int64_t>(split.length / (kColumnRows * kMinPerThread), 1, 65535);
  const std::int64_t wanted = (max_grid_blocks() + column_blocks - 1) / column_blocks;
  std::int64_t chunks = std::clamp<std::int64_t>(wanted, 1, most_chunks);
  const std::int64_t chunk = (split.length + chunks - 1) / chunks;
  chunks = (split.length + chunk - 1) / chunk;
  Scratch scratch(launch, sizeof(Acc) * static_cast<std::size_t>(chunks * columns));
  const dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(chunks));
  columns_kernel<T, Rule><<<grid, dim3(kColumnWidth, kColumnRows), 0, launch.stream()>>>(
      in.typed<const T>(), scratch.as<Acc>(), columns, split.length, split.inner, chunk);
  launch.launched();
  columns_finish_kernel<Out, Rule><<<grid_for(columns), kThreads, 0, launch.stream()>>>(
      scratch.as<Acc>(), out.typed<Out>(), make_indexer<1>(out.shape, {&out.strides}), columns,
      chunks, split.length);
  launch.launched();
}

template <class Out, class T, class Rule>
void reduce_axis_typed(const ArrayView& in, int axis, const ArrayView& out, const Launch& launch) {
  using Acc = typename Rule::Acc;
  const std::int64_t length = in.shape[axis];
  const std::int64_t axis_stride = in.strides[static_cast<std::size_t>(axis)];
  const std::int64_t segments = out.num_elements();
  if (segments == 0) return;
  if (reduces_dense_columns(in, axis)) return reduce_columns<Out, T, Rule>(in, axis, out, launch);
  Strides outer_strides{};
  for (int i = 0, j = 0; i < in.ndim(); ++i) {
    if (i != axis) {
      outer_strides[static_cast<std::size_t>(j++)] = in.strides[static_cast<std::size_t>(i)];
    }
  }
  const auto outer = make_indexer<2>(out.shape, {&outer_strides, &out.strides});
  // A zero-length axis still has a 1-element stride per segment in the flat index (never read).
  const std::int64_t flat_length = std::max<std::int64_t>(length, 1);
  auto input = thrust::make_transform_iterator(
      thrust::counting_iterator<std::int64_t>(0),
      LoadAxis<T, Rule>{in.typed<const T>(), outer, flat_length, axis_stride});
  const auto begins = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                                      SegmentBoundary{flat_length});
  // Segment j is [j * length, (j + 1) * length); a zero-length axis gives empty segments, which
  // CUB sets to the identity.
  const auto ends = length == 0 ? begins : begins + 1;
  std::size_t temp_bytes = 0;
  check_cuda(cub::DeviceSegmentedReduce::Reduce(nullptr, temp_bytes, input,
                                                static_cast<Acc*>(nullptr), segments, begins, ends,
                                                Rule{}, Rule::identity(), launch.stream()),
             "reduce_axis (cub::DeviceSegmentedReduce::Reduce size query)", launch.device());
  const std::size_t acc_bytes = aligned(sizeof(Acc) * static_cast<std::size_t>(segments));
  Scratch scratch(launch, acc_bytes + temp_bytes);
  Acc* acc = scratch.as<Acc>();
  launch.library_call();
  check_cuda(cub::DeviceSegmentedReduce::Reduce(scratch.as<void>(acc_bytes), temp_bytes, input, acc,
                                                segments, begins, ends, Rule{}, Rule::identity(),
                                                launch.stream()),
             "reduce_axis (cub::DeviceSegmentedReduce::Reduce)", launch.device());
  finish_kernel<Out, Rule><<<grid_for(segments), kThreads, 0, launch.stream()>>>(
      acc, out.typed<Out>(), outer, segments, length);
  launch.launched();
}

}  // namespace

void reduce_all(ReduceOp op, const ArrayView& in, const ArrayView& out, tandem::Stream& stream) {
  check_reduce_dtypes(op, in, out);
  Launch launch(stream, op_name(op));
  dispatch_rule(op, in.dtype, [&]<class T, class Rule>(T, Rule) {
    if (op == ReduceOp::argmax) {
      reduce_all_typed<std::int64_t, T, Rule>(in, out, launch);
    } else {
      reduce_all_typed<T, T, Rule>(in, out, launch);
    }
  });
}

void reduce_axis(ReduceOp op, const ArrayView& in, int axis, const ArrayView& out,
                 tandem::Stream& stream) {
  check_reduce_dtypes(op, in, out);
  Launch launch(stream, op_name(op));
  dispatch_rule(op, in.dtype, [&]<class T, class Rule>(T, Rule) {
    if (op == ReduceOp::argmax) {
      reduce_axis_typed<std::int64_t, T, Rule>(in, axis, out, launch);
    } else {
      reduce_axis_typed<T, T, Rule>(in, axis, out, launch);
    }
  });
}

}  // namespace tandem::ops::cuda
