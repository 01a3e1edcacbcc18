// Batch normalization in training mode on a gpu(i), the gpu(i) form of
// ops/src/cpu/batch_norm.cc (same conventions and results up to the order of the sums): two
// kernels per pass, partial sums per (channel, part of the channel's elements) into the
// stream's scratch memory, then each block combines its channel's parts in a fixed order
// (deterministic bits) and applies them. `stream` must be a gpu(i) compute stream.
#include <algorithm>
#include <cstdint>

#include "common/batch_norm_geometry.h"
#include "common/floating_checks.h"
#include "kernel_declarations.h"
#include "launch.cuh"

namespace tandem::ops::cuda {

namespace {

// The most parts a channel is split into (the apply kernel's blocks read them all).
constexpr std::int64_t kMaxParts = 1024;

struct Split {
  std::int64_t parts = 1;  // blocks per channel
  std::int64_t chunk = 0;  // elements of the channel per block (the last may have fewer)
};

// Enough parts to fill the device a few times over, each at least a few elements per thread.
Split split_channels(const BatchNormGeometry& g) {
  const std::int64_t m = g.per_channel();
  const std::int64_t by_size = (m + kThreads * 8 - 1) / (kThreads * 8);
  const std::int64_t by_device = std::max<std::int64_t>(1, max_grid_blocks() / g.channels);
  Split s;
  s.parts = std::clamp<std::int64_t>(std::min(by_size, by_device), 1, kMaxParts);
  s.chunk = (m + s.parts - 1) / s.parts;
  return s;
}

// The offset of element j (0 <= j < N * S) of channel c.
__device__ inline std::int64_t element(std::int64_t j, std::int64_t c, std::int64_t channels,
                                       std::int64_t spatial) {
  const std::int64_t n = j / spatial;
  return (n * channels + c) * spatial + (j - n * spatial);
}

// Block-wide sums of two doubles; every thread gets them.
__device__ void block_sum2(double& a, double& b, double* scratch) {
  scratch[threadIdx.x] = a;
  scratch[kThreads + threadIdx.x] = b;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      scratch[threadIdx.x] += scratch[threadIdx.x + half];
      scratch[kThreads + threadIdx.x] += scratch[kThreads + threadIdx.x + half];
    }
    __syncthreads();
  }
  a = scratch[0];
  b = scratch[kThreads];
  __syncthreads();
}

// Channel c's parts combined in part order (every block of the channel gets the same sums).
__device__ void combine_parts(const double* partial, std::int64_t c, std::int64_t parts, double& a,
                              double& b, double* scratch) {
  // Each thread sums a fixed subset in order, then the tree: a function of `parts` only.
  a = 0;
  b = 0;
  for (std::int64_t p = threadIdx.x; p < parts; p += kThreads) {
    a += partial[(c * parts + p) * 2];
    b += partial[(c * parts + p) * 2 + 1];
  }
  block_sum2(a, b, scratch);
}

// Forward sums of (x - shift) and its square, shift = the channel's first element.
template <class T>
__global__ void forward_sums(const T* x, double* partial, BatchNormGeometry g, Split s) {
  __shared__ double scratch[2 * kThreads];
  const std::int64_t c = blockIdx.y, p = blockIdx.x;
  const std::int64_t begin = p * s.chunk, end = min(g.per_channel(), begin + s.chunk);
  const double shift = static_cast<double>(x[c * g.spatial]);
  double sum = 0, squares = 0;
  for (std::int64_t j = begin + threadIdx.x; j < end; j += kThreads) {
    const double d = static_cast<double>(x[element(j, c, g.channels, g.spatial)]) - shift;
    sum += d;
    squares += d * d;
  }
  block_sum2(sum, squares, scratch);
  if (threadIdx.x == 0) {
    partial[(c * s.parts + p) * 2] = sum;
    partial[(c * s.parts + p) * 2 + 1] = squares;
  }
}

template <class T>
__global__ void forward_apply(const T* x, const T* gamma, const T* beta, T* running_mean,
                              T* running_var, T* y, T* saved_mean, T* saved_inv_std,
                              const double* partial, double momentum, double eps,
                              BatchNormGeometry g, Split s) {
  __shared__ double scratch[2 * kThreads];
  const std::int64_t c = blockIdx.y, p = blockIdx.x;
  double sum, squares;
  combine_parts(partial, c, s.parts, sum, squares, scratch);
  const double count = static_cast<double>(g.per_channel());
  const double centered_mean = sum / count;
  const double mean = static_cast<double>(x[c * g.spatial]) + centered_mean;
  const double variance = fmax(0.0, squares / count - centered_mean * centered_mean);
  const double inv_std = rsqrt(variance + eps);
  const T mean_t = static_cast<T>(mean);
  const T scale = static_cast<T>(inv_std * static_cast<double>(gamma[c]));
  const T shift_out = beta[c];
  const std::int64_t begin = p * s.chunk, end = min(g.per_channel(), begin + s.chunk);
  for (std::int64_t j = begin + threadIdx.x; j < end; j += kThreads) {
    const std::int64_t at = element(j, c, g.channels, g.spatial);
    y[at] = (x[at] - mean_t) * scale + shift_out;
  }
  if (p == 0 && threadIdx.x == 0) {
    saved_mean[c] = mean_t;
    saved_inv_std[c] = static_cast<T>(inv_std);
    running_mean[c] =
        static_cast<T>(momentum * static_cast<double>(running_mean[c]) + (1.0 - momentum) * mean);
    running_var[c] = static_cast<T>(momentum * static_cast<double>(running_var[c]) +
                                    (1.0 - momentum) * variance);
  }
}

// Backward sums of dy and dy * xhat.
template <class T>
__global__ void backward_sums(const T* x, const T* dy, const T* saved_mean, const T* saved_inv_std,
                              double* partial, BatchNormGeometry g, Split s) {
  __shared__ double scratch[2 * kThreads];
  const std::int64_t c = blockIdx.y, p = blockIdx.x;
  const std::int64_t begin = p * s.chunk, end = min(g.per_channel(), begin + s.chunk);
  const double mean = static_cast<double>(saved_mean[c]);
  const double inv_std = static_cast<double>(saved_inv_std[c]);
  double sum_dy = 0, sum_dy_xhat = 0;
  for (std::int64_t j = begin + threadIdx.x; j < end; j += kThreads) {
    const std::int64_t at = element(j, c, g.channels, g.spatial);
    const double d = static_cast<double>(dy[at]);
    sum_dy += d;
    sum_dy_xhat += d * (static_cast<double>(x[at]) - mean) * inv_std;
  }
  block_sum2(sum_dy, sum_dy_xhat, scratch);
  if (threadIdx.x == 0) {
    partial[(c * s.parts + p) * 2] = sum_dy;
    partial[(c * s.parts + p) * 2 + 1] = sum_dy_xhat;
  }
}

template <class T>
__global__ void backward_apply(const T* x, const T* dy, const T* gamma, const T* saved_mean,
                               const T* saved_inv_std, T* dx, T* dgamma, T* dbeta,
                               const double* partial, BatchNormGeometry g, Split s) {
  __shared__ double scratch[2 * kThreads];
  const std::int64_t c = blockIdx.y, p = blockIdx.x;
  double sum_dy, sum_dy_xhat;
  combine_parts(partial, c, s.parts, sum_dy, sum_dy_xhat, scratch);
  if (p == 0 && threadIdx.x == 0) {
    if (dbeta != nullptr) dbeta[c] = static_cast<T>(sum_dy);
    if (dgamma != nullptr) dgamma[c] = static_cast<T>(sum_dy_xhat);
  }
  if (dx == nullptr) return;
  const double count = static_cast<double>(g.per_channel());
  const double inv_std = static_cast<double>(saved_inv_std[c]);
  const T k = static_cast<T>(static_cast<double>(gamma[c]) * inv_std);
  const T a = static_cast<T>(sum_dy / count);
  const T x_scale = static_cast<T>(inv_std * sum_dy_xhat / count);
  const T mean_t = saved_mean[c];
  const std::int64_t begin = p * s.chunk, end = min(g.per_channel(), begin + s.chunk);
  for (std::int64_t j = begin + threadIdx.x; j < end; j += kThreads) {
    const std::int64_t at = element(j, c, g.channels, g.spatial);
    dx[at] = (dy[at] - a - (x[at] - mean_t) * x_scale) * k;
  }
}

dim3 grid_of(const BatchNormGeometry& g, const Split& s) {
  return dim3(static_cast<unsigned>(s.parts), static_cast<unsigned>(g.channels));
}

void check_channels(const char* op, const BatchNormGeometry& g) {
  if (g.channels > 65535) {
    throw Error(std::string("tandem: ") + op + ": at most 65535 channels on a gpu, got " +
                std::to_string(g.channels));
  }
}

template <class T>
T* data_or_null(const ArrayView& v) {
  return v.data == nullptr ? nullptr : v.typed<T>();
}

}  // namespace

void batch_norm_forward(const ArrayView& x, const ArrayView& gamma, const ArrayView& beta,
                        const ArrayView& running_mean, const ArrayView& running_var,
                        const ArrayView& y, const ArrayView& saved_mean,
                        const ArrayView& saved_inv_std, double momentum, double eps,
                        tandem::Stream& stream) {
  const char* op = "batch_norm";
  const BatchNormGeometry g = batch_norm_forward_geometry(x, gamma, beta, running_mean, running_var,
                                                          y, saved_mean, saved_inv_std);
  if (g.per_channel() == 0 || g.channels == 0) return;
  check_channels(op, g);
  Launch launch(stream, op);
  const Split s = split_channels(g);
  Scratch partial(launch, static_cast<std::size_t>(g.channels * s.parts * 2) * sizeof(double));
  dispatch_floating(x.dtype, op, [&]<class T>(T) {
    forward_sums<T><<<grid_of(g, s), kThreads, 0, launch.stream()>>>(x.typed<const T>(),
                                                                     partial.as<double>(), g, s);
    launch.launched();
    forward_apply<T><<<grid_of(g, s), kThreads, 0, launch.stream()>>>(
        x.typed<const T>(), gamma.typed<const T>(), beta.typed<const T>(), running_mean.typed<T>(),
        running_var.typed<T>(), y.typed<T>(), saved_mean.typed<T>(), saved_inv_std.typed<T>(),
        partial.as<double>(), momentum, eps, g, s);
    launch.launched();
  });
}

void batch_norm_backward(const ArrayView& x, const ArrayView& dy, const ArrayView& gamma,
                         const ArrayView& saved_mean, const ArrayView& saved_inv_std,
                         const ArrayView& dx, const ArrayView& dgamma, const ArrayView& dbeta,
                         tandem::Stream& stream) {
  const char* op = "batch_norm_backward";
  const BatchNormGeometry g =
      batch_norm_backward_geometry(x, dy, gamma, saved_mean, saved_inv_std, dx, dgamma, dbeta);
  if (g.per_channel() == 0 || g.channels == 0) return;
  check_channels(op, g);
  Launch launch(stream, op);
  const Split s = split_channels(g);
  Scratch partial(launch, static_cast<std::size_t>(g.channels * s.parts * 2) * sizeof(double));
  dispatch_floating(x.dtype, op, [&]<class T>(T) {
    backward_sums<T><<<grid_of(g, s), kThreads, 0, launch.stream()>>>(
        x.typed<const T>(), dy.typed<const T>(), saved_mean.typed<const T>(),
        saved_inv_std.typed<const T>(), partial.as<double>(), g, s);
    launch.launched();
    backward_apply<T><<<grid_of(g, s), kThreads, 0, launch.stream()>>>(
        x.typed<const T>(), dy.typed<const T>(), gamma.typed<const T>(),
        saved_mean.typed<const T>(), saved_inv_std.typed<const T>(), data_or_null<T>(dx),
        data_or_null<T>(dgamma), data_or_null<T>(dbeta), partial.as<double>(), g, s);
    launch.launched();
  });
}

}  // namespace tandem::ops::cuda
