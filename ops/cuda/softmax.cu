// Softmax over rows on a gpu(i). A row of at most kWarpRowClasses classes is one warp's: its
// values sit in the lanes' registers (read once, coalesced), the maximum and the sum are warp
// shuffles, and a block holds kThreads / kWarp rows. A longer row is one block's: its threads
// stride over the classes and reduce with warp shuffles, then across the block's warps in shared
// memory. Every reduction combines in a fixed order, so a launch gives the same bits each time.
#include <cstdint>
#include <type_traits>

#include "common/floating_checks.h"
#include "launch.cuh"
#include "tandem/ops/cuda/softmax.h"

namespace tandem::ops::cuda {

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpsPerBlock = kThreads / kWarp;
// The longest row a warp holds in registers: kWarp lanes x 32 values.
constexpr std::int64_t kWarpRowClasses = 32 * kWarp;

// `candidate` replaces the running maximum `max` when larger; a NaN wins and stays.
template <class T>
__device__ void take_max(T& max, T candidate) {
  if (candidate > max || candidate != candidate) max = candidate;
}

// Butterfly reductions: every lane of the warp ends with the same result.
template <class T>
__device__ T warp_max(T value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    take_max(value, __shfl_xor_sync(kFullMask, value, offset));
  }
  return value;
}

template <class T>
__device__ T warp_sum(T value) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(kFullMask, value, offset);
  }
  return value;
}

// The warp path's rows: warp w of block b takes rows b * kWarpsPerBlock + w, then strides by
// every warp of the grid. The row index is the same in every lane, so whole warps shuffle.
struct WarpRows {
  std::int64_t first;
  std::int64_t step;
  int lane;
};
__device__ WarpRows warp_rows() {
  return {std::int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / kWarp,
          std::int64_t{gridDim.x} * kWarpsPerBlock, static_cast<int>(threadIdx.x % kWarp)};
}

// One row's values in a warp's registers (lane l holds classes l, l + 32, ...), with its maximum
// and sum(exp(x - max)). Lanes past the row repeat x[0], which changes neither.
template <class T, int kPerLane>
struct WarpRow {
  T values[kPerLane];
  T max;
  T sum;

  __device__ void load(const T* x, int classes, int lane) {
    max = x[0];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = lane + i * kWarp;
      values[i] = c < classes ? x[c] : x[0];
      take_max(max, values[i]);
    }
    max = warp_max(max);
    T part(0);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (lane + i * kWarp < classes) part += exp(values[i] - max);
    }
    sum = warp_sum(part);
  }
};

template <class T, int kPerLane>
__global__ void softmax_warp_kernel(const T* x, T* y, std::int64_t rows, int classes,
                                    bool take_log) {
  const WarpRows walk = warp_rows();
  for (std::int64_t r = walk.first; r < rows; r += walk.step) {
    WarpRow<T, kPerLane> row;
    row.load(x + r * classes, classes, walk.lane);
    const T log_sum = log(row.sum);
    T* yr = y + r * classes;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = walk.lane + i * kWarp;
      if (c < classes) {
        yr[c] =
            take_log ? (row.values[i] - row.max) - log_sum : exp(row.values[i] - row.max) / row.sum;
      }
    }
  }
}

template <class T, int kPerLane>
__global__ void softmax_backward_warp_kernel(const T* y, const T* dy, T* dx, std::int64_t rows,
                                             int classes, bool take_log) {
  const WarpRows walk = warp_rows();
  for (std::int64_t r = walk.first; r < rows; r += walk.step) {
    const T* yr = y + r * classes;
    const T* gr = dy + r * classes;
    T ys[kPerLane], gs[kPerLane];
    T part(0);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = walk.lane + i * kWarp;
      ys[i] = c < classes ? yr[c] : T(0);
      gs[i] = c < classes ? gr[c] : T(0);
      part += take_log ? gs[i] : gs[i] * ys[i];
    }
    const T dot = warp_sum(part);
    T* dr = dx + r * classes;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = walk.lane + i * kWarp;
      if (c < classes) dr[c] = take_log ? gs[i] - exp(ys[i]) * dot : ys[i] * (gs[i] - dot);
    }
  }
}

template <class T, int kPerLane>
__global__ void cross_entropy_warp_kernel(const T* x, const std::int32_t* labels, T* loss, T* p,
                                          std::int64_t rows, int classes) {
  const WarpRows walk = warp_rows();
  for (std::int64_t r = walk.first; r < rows; r += walk.step) {
    const T* xr = x + r * classes;
    WarpRow<T, kPerLane> row;
    row.load(xr, classes, walk.lane);
    const std::int64_t k = labels[r];
    if (walk.lane == 0) {
      loss[r] = k >= 0 && k < classes ? -((xr[k] - row.max) - log(row.sum)) : T(0);
    }
    if (p != nullptr) {
      T* pr = p + r * classes;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        const int c = walk.lane + i * kWarp;
        if (c < classes) pr[c] = exp(row.values[i] - row.max) / row.sum;
      }
    }
  }
}

// Calls fn(std::integral_constant<int, K>) with the fewest values per lane K (a power of two)
// that hold `classes` <= kWarpRowClasses in one warp.
template <class Fn>
void with_values_per_lane(std::int64_t classes, Fn&& fn) {
  if (classes <= 1 * kWarp) return fn(std::integral_constant<int, 1>{});
  if (classes <= 2 * kWarp) return fn(std::integral_constant<int, 2>{});
  if (classes <= 4 * kWarp) return fn(std::integral_constant<int, 4>{});
  if (classes <= 8 * kWarp) return fn(std::integral_constant<int, 8>{});
  if (classes <= 16 * kWarp) return fn(std::integral_constant<int, 16>{});
  return fn(std::integral_constant<int, 32>{});
}

// Blocks for the warp path: a warp per row, at most max_grid_blocks() (then warps stride).
unsigned warp_row_grid(std::int64_t rows) {
  const std::int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, max_grid_blocks()));
}

bool warp_rows_fit(std::int64_t classes) {
  return classes >= 1 && classes <= kWarpRowClasses;
}

// The block path (rows longer than a warp holds): the block-wide reduction of `value`, every
// thread gets the result; Max: maximum (a NaN wins), else sum. `partials` holds a value per warp.
template <class T, bool Max>
__device__ T block_reduce(T value, T* partials) {
  value = Max ? warp_max(value) : warp_sum(value);
  if (threadIdx.x % kWarp == 0) partials[threadIdx.x / kWarp] = value;
  __syncthreads();
  value = partials[0];
  for (int w = 1; w < kWarpsPerBlock; ++w) {
    if constexpr (Max) {
      take_max(value, partials[w]);
    } else {
      value += partials[w];
    }
  }
  __syncthreads();  // `partials` is reused by the next reduction
  return value;
}

// The row maximum and sum(exp(x - max)).
template <class T>
__device__ void row_stats(const T* x, std::int64_t classes, T* partials, T& max, T& sum) {
  T m = x[0];
  for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) take_max(m, x[c]);
  max = block_reduce<T, true>(m, partials);
  T s(0);
  for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) s += exp(x[c] - max);
  sum = block_reduce<T, false>(s, partials);
}

template <class T>
__global__ void softmax_kernel(const T* x, T* y, std::int64_t rows, std::int64_t classes,
                               bool take_log) {
  __shared__ T partials[kWarpsPerBlock];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * classes;
    T* yr = y + r * classes;
    T max, sum;
    row_stats(xr, classes, partials, max, sum);
    const T log_sum = log(sum);
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      yr[c] = take_log ? (xr[c] - max) - log_sum : exp(xr[c] - max) / sum;
    }
  }
}

template <class T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, std::int64_t rows,
                                        std::int64_t classes, bool take_log) {
  __shared__ T partials[kWarpsPerBlock];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * classes;
    const T* gr = dy + r * classes;
    T* dr = dx + r * classes;
    T part(0);
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      part += take_log ? gr[c] : gr[c] * yr[c];
    }
    const T dot = block_reduce<T, false>(part, partials);
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      dr[c] = take_log ? gr[c] - exp(yr[c]) * dot : yr[c] * (gr[c] - dot);
    }
  }
}

template <class T>
__global__ void cross_entropy_kernel(const T* x, const std::int32_t* labels, T* loss, T* p,
                                     std::int64_t rows, std::int64_t classes) {
  __shared__ T partials[kWarpsPerBlock];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    if (classes == 0) {
      if (threadIdx.x == 0) loss[r] = T(0);
      continue;
    }
    const T* xr = x + r * classes;
    T max, sum;
    row_stats(xr, classes, partials, max, sum);
    const std::int64_t k = labels[r];
    if (threadIdx.x == 0) loss[r] = k >= 0 && k < classes ? -((xr[k] - max) - log(sum)) : T(0);
    if (p != nullptr) {
      for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
        p[r * classes + c] = exp(xr[c] - max) / sum;
      }
    }
  }
}

// Element-wise over rows x classes: a thread per element, whatever the row length.
template <class T>
__global__ void cross_entropy_backward_kernel(const T* p, const std::int32_t* labels, const T* g,
                                              std::int64_t g_stride, T* d, std::int64_t n,
                                              std::int64_t classes) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    const std::int64_t r = i / classes, c = i - r * classes;
    const std::int64_t k = labels[r];
    const bool ignored = k < 0 || k >= classes;  // loss 0, gradient 0 (the CPU kernel's rule)
    d[i] = ignored ? T(0) : g[r * g_stride] * (p[i] - (c == k ? T(1) : T(0)));
  }
}

std::int64_t class_count(const ArrayView& v) {
  return v.ndim() == 0 ? 1 : v.shape[v.ndim() - 1];
}

unsigned row_grid(std::int64_t rows) {
  return static_cast<unsigned>(rows < 65535 ? rows : 65535);
}

}  // namespace

void softmax_rows(const ArrayView& in, const ArrayView& out, bool log, tandem::Stream& stream) {
  const char* op = log ? "log_softmax" : "softmax";
  const std::int64_t classes = class_count(out),
                     rows = out.num_elements() / (classes ? classes : 1);
  if (rows == 0 || classes == 0) return;
  Launch launch(stream, op);
  dispatch_floating(out.dtype, op, [&]<class T>(T) {
    if (warp_rows_fit(classes)) {
      with_values_per_lane(classes, [&](auto per_lane) {
        softmax_warp_kernel<T, decltype(per_lane)::value>
            <<<warp_row_grid(rows), kThreads, 0, launch.stream()>>>(
                in.typed<const T>(), out.typed<T>(), rows, static_cast<int>(classes), log);
      });
    } else {
      softmax_kernel<T><<<row_grid(rows), kThreads, 0, launch.stream()>>>(
          in.typed<const T>(), out.typed<T>(), rows, classes, log);
    }
    launch.launched();
  });
}

void softmax_rows_backward(const ArrayView& y, const ArrayView& dy, const ArrayView& dx, bool log,
                           tandem::Stream& stream) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  const std::int64_t classes = class_count(dx), rows = dx.num_elements() / (classes ? classes : 1);
  if (rows == 0 || classes == 0) return;
  Launch launch(stream, op);
  dispatch_floating(dx.dtype, op, [&]<class T>(T) {
    if (warp_rows_fit(classes)) {
      with_values_per_lane(classes, [&](auto per_lane) {
        softmax_backward_warp_kernel<T, decltype(per_lane)::value>
            <<<warp_row_grid(rows), kThreads, 0, launch.stream()>>>(
                y.typed<const T>(), dy.typed<const T>(), dx.typed<T>(), rows,
                static_cast<int>(classes), log);
      });
    } else {
      softmax_backward_kernel<T><<<row_grid(rows), kThreads, 0, launch.stream()>>>(
          y.typed<const T>(), dy.typed<const T>(), dx.typed<T>(), rows, classes, log);
    }
    launch.launched();
  });
}

void softmax_cross_entropy_rows(const ArrayView& logits, const ArrayView& labels,
                                const ArrayView& loss, const ArrayView& probabilities,
                                tandem::Stream& stream) {
  const char* op = "softmax_cross_entropy";
  check_int32_labels(op, labels);
  const std::int64_t rows = loss.num_elements(), classes = class_count(logits);
  if (rows == 0) return;
  Launch launch(stream, op);
  dispatch_floating(logits.dtype, op, [&]<class T>(T) {
    T* p = probabilities.data != nullptr ? probabilities.typed<T>() : nullptr;
    if (warp_rows_fit(classes)) {
      with_values_per_lane(classes, [&](auto per_lane) {
        cross_entropy_warp_kernel<T, decltype(per_lane)::value>
            <<<warp_row_grid(rows), kThreads, 0, launch.stream()>>>(
                logits.typed<const T>(), labels.typed<const std::int32_t>(), loss.typed<T>(), p,
                rows, static_cast<int>(classes));
      });
    } else {
      cross_entropy_kernel<T><<<row_grid(rows), kThreads, 0, launch.stream()>>>(
          logits.typed<const T>(), labels.typed<const std::int32_t>(), loss.typed<T>(), p, rows,
          classes);
    }
    launch.launched();
  });
}

void softmax_cross_entropy_backward(const ArrayView& probabilities, const ArrayView& labels,
                                    const ArrayView& head_grad, const ArrayView& dlogits,
                                    tandem::Stream& stream) {
  const char* op = "softmax_cross_entropy_backward";
  check_int32_labels(op, labels);
  const std::int64_t classes = class_count(dlogits), n = dlogits.num_elements();
  if (n == 0 || classes == 0) return;
  Launch launch(stream, op);
  dispatch_floating(dlogits.dtype, op, [&]<class T>(T) {
    cross_entropy_backward_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
        probabilities.typed<const T>(), labels.typed<const std::int32_t>(),
        head_grad.typed<const T>(), head_grad.ndim() == 0 ? 0 : head_grad.strides[0],
        dlogits.typed<T>(), n, classes);
    launch.launched();
  });
}

}  // namespace tandem::ops::cuda
