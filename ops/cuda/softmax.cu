// Softmax over rows on a gpu(i): one block of kThreads per row (a grid-stride loop over rows),
// the row maximum and sums reduced in shared memory.
#include <cstdint>

#include "common/floating_checks.h"
#include "launch.cuh"
#include "tandem/ops/cuda/softmax.h"

namespace tandem::ops::cuda {

namespace {

// The block-wide reduction of `value` (every thread gets the result); Max: maximum (a NaN
// wins), else sum.
template <class T, bool Max>
__device__ T block_reduce(T value, T* scratch) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const T other = scratch[threadIdx.x + half];
      if constexpr (Max) {
        if (other > scratch[threadIdx.x] || other != other) scratch[threadIdx.x] = other;
      } else {
        scratch[threadIdx.x] += other;
      }
    }
    __syncthreads();
  }
  const T result = scratch[0];
  __syncthreads();
  return result;
}

// The row maximum and sum(exp(x - max)).
template <class T>
__device__ void row_stats(const T* x, std::int64_t classes, T* scratch, T& max, T& sum) {
  T m = x[0];
  for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    if (x[c] > m || x[c] != x[c]) m = x[c];
  }
  max = block_reduce<T, true>(m, scratch);
  T s(0);
  for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) s += exp(x[c] - max);
  sum = block_reduce<T, false>(s, scratch);
}

template <class T>
__global__ void softmax_kernel(const T* x, T* y, std::int64_t rows, std::int64_t classes,
                               bool take_log) {
  __shared__ T scratch[kThreads];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * classes;
    T* yr = y + r * classes;
    T max, sum;
    row_stats(xr, classes, scratch, max, sum);
    const T log_sum = log(sum);
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      yr[c] = take_log ? (xr[c] - max) - log_sum : exp(xr[c] - max) / sum;
    }
  }
}

template <class T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, std::int64_t rows,
                                        std::int64_t classes, bool take_log) {
  __shared__ T scratch[kThreads];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * classes;
    const T* gr = dy + r * classes;
    T* dr = dx + r * classes;
    T part(0);
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      part += take_log ? gr[c] : gr[c] * yr[c];
    }
    const T dot = block_reduce<T, false>(part, scratch);
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      dr[c] = take_log ? gr[c] - exp(yr[c]) * dot : yr[c] * (gr[c] - dot);
    }
  }
}

template <class T>
__global__ void cross_entropy_kernel(const T* x, const std::int32_t* labels, T* loss, T* p,
                                     std::int64_t rows, std::int64_t classes) {
  __shared__ T scratch[kThreads];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    if (classes == 0) {
      if (threadIdx.x == 0) loss[r] = T(0);
      continue;
    }
    const T* xr = x + r * classes;
    T max, sum;
    row_stats(xr, classes, scratch, max, sum);
    const std::int64_t k = labels[r];
    if (threadIdx.x == 0) loss[r] = k >= 0 && k < classes ? -((xr[k] - max) - log(sum)) : T(0);
    if (p != nullptr) {
      for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
        p[r * classes + c] = exp(xr[c] - max) / sum;
      }
    }
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(const T* p, const std::int32_t* labels, const T* g,
                                              std::int64_t g_stride, T* d, std::int64_t rows,
                                              std::int64_t classes) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t k = labels[r];
    const bool ignored = k < 0 || k >= classes;  // loss 0, gradient 0 (the CPU kernel's rule)
    for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      d[r * classes + c] =
          ignored ? T(0) : g[r * g_stride] * (p[r * classes + c] - (c == k ? T(1) : T(0)));
    }
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
    softmax_kernel<T><<<row_grid(rows), kThreads, 0, launch.stream()>>>(
        in.typed<const T>(), out.typed<T>(), rows, classes, log);
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
    softmax_backward_kernel<T><<<row_grid(rows), kThreads, 0, launch.stream()>>>(
        y.typed<const T>(), dy.typed<const T>(), dx.typed<T>(), rows, classes, log);
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
    cross_entropy_kernel<T><<<row_grid(rows), kThreads, 0, launch.stream()>>>(
        logits.typed<const T>(), labels.typed<const std::int32_t>(), loss.typed<T>(),
        probabilities.data != nullptr ? probabilities.typed<T>() : nullptr, rows, classes);
    launch.launched();
  });
}

void softmax_cross_entropy_backward(const ArrayView& probabilities, const ArrayView& labels,
                                    const ArrayView& head_grad, const ArrayView& dlogits,
                                    tandem::Stream& stream) {
  const char* op = "softmax_cross_entropy_backward";
  check_int32_labels(op, labels);
  const std::int64_t classes = class_count(dlogits),
                     rows = dlogits.num_elements() / (classes ? classes : 1);
  if (rows == 0 || classes == 0) return;
  Launch launch(stream, op);
  dispatch_floating(dlogits.dtype, op, [&]<class T>(T) {
    cross_entropy_backward_kernel<T><<<row_grid(rows), kThreads, 0, launch.stream()>>>(
        probabilities.typed<const T>(), labels.typed<const std::int32_t>(),
        head_grad.typed<const T>(), head_grad.ndim() == 0 ? 0 : head_grad.strides[0],
        dlogits.typed<T>(), rows, classes);
    launch.launched();
  });
}

}  // namespace tandem::ops::cuda
