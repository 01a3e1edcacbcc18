// Copy, fill and arange on a gpu(i), element for element the CPU's results (tandem/ops/convert.h
// for dtype conversions; arange computes start + i * step in double, without FMA contraction).
#include "launch.cuh"
#include "tandem/ops/convert.h"
#include "tandem/ops/cuda/copy.h"

namespace tandem::ops::cuda {

namespace {

template <class To, class From>
__global__ void copy_dense_kernel(const From* in, To* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    out[i] = convert<To>(in[i]);
  }
}

template <class To, class From>
__global__ void copy_strided_kernel(const From* in, To* out, StridedIndexer<2> indexer,
                                    std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    std::int64_t off[2];
    indexer.offsets(i, off);
    out[off[1]] = convert<To>(in[off[0]]);
  }
}

template <class T>
__global__ void fill_kernel(T value, T* out, StridedIndexer<1> indexer, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    std::int64_t off[1];
    indexer.offsets(i, off);
    out[off[0]] = value;
  }
}

template <class T>
__global__ void arange_kernel(double start, double step, T* out, StridedIndexer<1> indexer,
                              std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    std::int64_t off[1];
    indexer.offsets(i, off);
    out[off[0]] = convert<T>(start + static_cast<double>(i) * step);
  }
}

template <class T, class C>
__global__ void where_kernel(const C* condition, const T* a, const T* b, T* out,
                             StridedIndexer<4> indexer, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    std::int64_t off[4];
    indexer.offsets(i, off);
    out[off[3]] = convert<double>(condition[off[0]]) != 0.0 ? a[off[1]] : b[off[2]];
  }
}

}  // namespace

void copy(const ArrayView& in, const ArrayView& out, tandem::Stream& stream) {
  const std::int64_t n = out.num_elements();
  if (n == 0) return;
  Launch launch(stream, "copy");
  const auto indexer = make_indexer<2>(out.shape, {&in.strides, &out.strides});
  dispatch_storage_dtype(out.dtype, [&]<class To>(To) {
    dispatch_storage_dtype(in.dtype, [&]<class From>(From) {
      if constexpr (std::is_same_v<To, From>) {
        if (indexer.dense()) {  // one run: a plain device-to-device copy
          check_cuda(cudaMemcpyAsync(out.data, in.data, static_cast<std::size_t>(n) * sizeof(To),
                                     cudaMemcpyDefault, launch.stream()),
                     "copy (cudaMemcpyAsync)", launch.device());
          count_kernel_launches();
          return;
        }
      }
      if (indexer.dense()) {
        copy_dense_kernel<To, From><<<grid_for(n), kThreads, 0, launch.stream()>>>(
            in.typed<const From>(), out.typed<To>(), n);
      } else {
        copy_strided_kernel<To, From><<<grid_for(n), kThreads, 0, launch.stream()>>>(
            in.typed<const From>(), out.typed<To>(), indexer, n);
      }
      launch.launched();
    });
  });
}

void fill(const ArrayView& out, double value, tandem::Stream& stream) {
  const std::int64_t n = out.num_elements();
  if (n == 0) return;
  Launch launch(stream, "fill");
  const auto indexer = make_indexer<1>(out.shape, {&out.strides});
  dispatch_storage_dtype(out.dtype, [&]<class T>(T) {
    fill_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(convert<T>(value), out.typed<T>(),
                                                                  indexer, n);
    launch.launched();
  });
}

void where(const ArrayView& condition, const ArrayView& a, const ArrayView& b, const ArrayView& out,
           tandem::Stream& stream) {
  const std::int64_t n = out.num_elements();
  if (n == 0) return;
  Launch launch(stream, "where");
  const auto indexer =
      make_indexer<4>(out.shape, {&condition.strides, &a.strides, &b.strides, &out.strides});
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    dispatch_dtype(condition.dtype, [&]<class C>(C) {
      where_kernel<T, C><<<grid_for(n), kThreads, 0, launch.stream()>>>(
          condition.typed<const C>(), a.typed<const T>(), b.typed<const T>(), out.typed<T>(),
          indexer, n);
      launch.launched();
    });
  });
}

void arange(const ArrayView& out, double start, double step, tandem::Stream& stream) {
  const std::int64_t n = out.num_elements();
  if (n == 0) return;
  Launch launch(stream, "arange");
  const auto indexer = make_indexer<1>(out.shape, {&out.strides});
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    arange_kernel<T>
        <<<grid_for(n), kThreads, 0, launch.stream()>>>(start, step, out.typed<T>(), indexer, n);
    launch.launched();
  });
}

}  // namespace tandem::ops::cuda
