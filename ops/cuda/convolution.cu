// Convolution on a gpu(i): cuDNN when it loads (cudnn_convolution.h), else the im2col / col2im
// kernels below and cuBLAS, with no per-sample loop.
//
// The samples go in chunks whose scratch fits a bounded block (common/conv_launches.h, which
// also says how many launches each pass makes; sim counts the same). Per chunk and group:
//   forward          im2col (layout [sample][group][R][P], R = col_rows(), P = out_h * out_w),
//                    then one strided-batched product over the chunk's samples;
//   backward data    one strided-batched product into the im2col layout, then col2im;
//   backward weight  im2col in the layout [group][R][sample][P] and dy regrouped as
//                    [channel][sample][P], so that dW[g] = dy[g] . col[g]^T is one gemm whose
//                    inner dimension runs over every sample and output pixel of the chunk
//                    (beta = 1 accumulates the chunks after the first).
// The scratch is the stream's scratch arena (launch.cuh): no allocation in a steady loop.
//
// cuBLAS is column-major: row-major C (m x n) = op(A) . op(B) is the column-major product
// C^T = op(B)^T . op(A)^T, so `row_major_gemm` passes (B, A) with m and n swapped.
#include <cublas_v2.h>

#include <algorithm>
#include <string>

#include "common/conv_bias.h"
#include "common/conv_launches.h"
#include "common/floating_checks.h"
#include "cudnn_convolution.h"
#include "kernel_declarations.h"
#include "launch.cuh"
#include "tandem/ops/cuda/convolution.h"

namespace tandem::ops::cuda {

namespace {

void check_cublas(cublasStatus_t status, const Launch& launch, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  (void)cudaGetLastError();
  throw Error(std::string("tandem: ") + launch.op() + ": " + call + " on gpu(" +
              std::to_string(launch.device()) + ") failed: " + cublasGetStatusString(status) +
              " (" + cublasGetStatusName(status) + ")");
}

// Row-major, for `batch` products at once: C_i (m x n) = op(A_i) . op(B_i) + beta * C_i, with
// X_i = X + i * stride_x (a stride of 0 reuses one matrix).
struct Operand {
  const void* data;
  std::int64_t ld;
  std::int64_t stride;
  bool transposed;
};

template <class T>
void row_major_gemm(const Launch& launch, cublasHandle_t handle, std::int64_t m, std::int64_t n,
                    std::int64_t k, Operand a, Operand b, T beta, T* c, std::int64_t ldc,
                    std::int64_t stride_c, std::int64_t batch) {
  const T one = 1;
  const cublasOperation_t op_a = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  launch.library_call();
  if constexpr (std::is_same_v<T, float>) {
    check_cublas(cublasSgemmStridedBatched_64(handle, op_b, op_a, n, m, k, &one,
                                              static_cast<const float*>(b.data), b.ld, b.stride,
                                              static_cast<const float*>(a.data), a.ld, a.stride,
                                              &beta, c, ldc, stride_c, batch),
                 launch, "cublasSgemmStridedBatched_64");
  } else {
    check_cublas(cublasDgemmStridedBatched_64(handle, op_b, op_a, n, m, k, &one,
                                              static_cast<const double*>(b.data), b.ld, b.stride,
                                              static_cast<const double*>(a.data), a.ld, a.stride,
                                              &beta, c, ldc, stride_c, batch),
                 launch, "cublasDgemmStridedBatched_64");
  }
}

// One thread per element of the chunk's im2col matrices.
template <class T>
__global__ void im2col_kernel(const T* x, Conv2dGeometry g, std::int64_t samples, T* col) {
  const std::int64_t P = g.out_h * g.out_w, KK = g.kernel_h * g.kernel_w;
  const std::int64_t total = samples * g.in_channels * KK * P;
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    // e = ((n * C + c) * KK + tap) * P + p: rows of a group are its channels' taps.
    const std::int64_t p = e % P, tap = (e / P) % KK, nc = e / (P * KK);
    const std::int64_t oh = p / g.out_w, ow = p % g.out_w;
    const std::int64_t ih = oh * g.stride_h - g.pad_h + (tap / g.kernel_w) * g.dilation_h;
    const std::int64_t iw = ow * g.stride_w - g.pad_w + (tap % g.kernel_w) * g.dilation_w;
    col[e] = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w ? x[(nc * g.in_h + ih) * g.in_w + iw]
                                                              : T(0);
  }
}

// The weight gradient's im2col: the same entries in the layout [row][sample][P], rows being
// (channel, tap) pairs, so a group's R rows are one R x (samples * P) matrix.
template <class T>
__global__ void im2col_rows_kernel(const T* x, Conv2dGeometry g, std::int64_t samples, T* col) {
  const std::int64_t P = g.out_h * g.out_w, KK = g.kernel_h * g.kernel_w;
  const std::int64_t total = samples * g.in_channels * KK * P;
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    // e = ((c * KK + tap) * samples + n) * P + p
    const std::int64_t p = e % P, n = (e / P) % samples, row = e / (P * samples);
    const std::int64_t c = row / KK, tap = row % KK;
    const std::int64_t oh = p / g.out_w, ow = p % g.out_w;
    const std::int64_t ih = oh * g.stride_h - g.pad_h + (tap / g.kernel_w) * g.dilation_h;
    const std::int64_t iw = ow * g.stride_w - g.pad_w + (tap % g.kernel_w) * g.dilation_w;
    col[e] = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w
                 ? x[((n * g.in_channels + c) * g.in_h + ih) * g.in_w + iw]
                 : T(0);
  }
}

// dy of `samples` samples ([sample][channel][P]) regrouped as [channel][sample][P].
template <class T>
__global__ void regroup_kernel(const T* dy, std::int64_t channels, std::int64_t samples,
                               std::int64_t plane, T* out) {
  const std::int64_t total = samples * channels * plane;
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    const std::int64_t p = e % plane, n = (e / plane) % samples, k = e / (plane * samples);
    out[e] = dy[(n * channels + k) * plane + p];
  }
}

// One thread per input element: the sum of every im2col entry that copied it.
template <class T>
__global__ void col2im_kernel(const T* col, Conv2dGeometry g, std::int64_t samples, T* dx) {
  const std::int64_t P = g.out_h * g.out_w, KK = g.kernel_h * g.kernel_w;
  const std::int64_t total = samples * g.in_channels * g.in_h * g.in_w;
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    const std::int64_t iw = e % g.in_w, ih = (e / g.in_w) % g.in_h, nc = e / (g.in_w * g.in_h);
    const T* rows = col + nc * KK * P;
    T sum = 0;
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const std::int64_t h = ih + g.pad_h - kh * g.dilation_h;
      if (h < 0 || h % g.stride_h != 0 || h / g.stride_h >= g.out_h) continue;
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const std::int64_t w = iw + g.pad_w - kw * g.dilation_w;
        if (w < 0 || w % g.stride_w != 0 || w / g.stride_w >= g.out_w) continue;
        sum += rows[(kh * g.kernel_w + kw) * P + (h / g.stride_h) * g.out_w + w / g.stride_w];
      }
    }
    dx[e] = sum;
  }
}

template <class T>
__global__ void add_bias_kernel(T* y, const T* bias, std::int64_t channels, std::int64_t plane,
                                std::int64_t total) {
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    y[e] += bias[(e / plane) % channels];
  }
}

template <class T>
void forward(const ArrayView& xv, const ArrayView& wv, const ArrayView& bv, const ArrayView& yv,
             const Conv2dGeometry& g, tandem::Stream& stream) {
  Launch launch(stream, "conv2d");
  cublasHandle_t handle = tandem::detail::cublas_handle(stream);
  const std::int64_t R = g.col_rows(), P = g.col_cols(), Kg = g.out_channels_per_group();
  const std::int64_t x_sample = g.in_channels * g.in_h * g.in_w;
  const std::int64_t chunk = conv_chunk_samples(g, ConvPass::forward, sizeof(T));
  Scratch col(launch, static_cast<std::size_t>(chunk * g.groups * R * P) * sizeof(T));
  const T* x = xv.typed<const T>();
  T* y = yv.typed<T>();
  for (std::int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const std::int64_t samples = std::min(chunk, g.batch - n0);
    im2col_kernel<T><<<grid_for(samples * g.groups * R * P), kThreads, 0, launch.stream()>>>(
        x + n0 * x_sample, g, samples, col.as<T>());
    launch.launched();
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      row_major_gemm<T>(launch, handle, Kg, P, R,
                        Operand{wv.typed<const T>() + grp * Kg * R, R, 0, false},
                        Operand{col.as<T>() + grp * R * P, P, g.groups * R * P, false}, T(0),
                        y + (n0 * g.out_channels + grp * Kg) * P, P, g.out_channels * P, samples);
    }
  }
  if (bv.data == nullptr) return;
  const std::int64_t total = yv.num_elements();
  add_bias_kernel<T><<<grid_for(total), kThreads, 0, launch.stream()>>>(y, bv.typed<const T>(),
                                                                        g.out_channels, P, total);
  launch.launched();
}

template <class T>
void backward_data(const ArrayView& dyv, const ArrayView& wv, const ArrayView& dxv,
                   const Conv2dGeometry& g, tandem::Stream& stream) {
  Launch launch(stream, "conv2d_backward_data");
  cublasHandle_t handle = tandem::detail::cublas_handle(stream);
  const std::int64_t R = g.col_rows(), P = g.col_cols(), Kg = g.out_channels_per_group();
  const std::int64_t x_sample = g.in_channels * g.in_h * g.in_w;
  const std::int64_t chunk = conv_chunk_samples(g, ConvPass::backward_data, sizeof(T));
  Scratch col(launch, static_cast<std::size_t>(chunk * g.groups * R * P) * sizeof(T));
  const T* dy = dyv.typed<const T>();
  for (std::int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const std::int64_t samples = std::min(chunk, g.batch - n0);
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      row_major_gemm<T>(
          launch, handle, R, P, Kg, Operand{wv.typed<const T>() + grp * Kg * R, R, 0, true},
          Operand{dy + (n0 * g.out_channels + grp * Kg) * P, P, g.out_channels * P, false}, T(0),
          col.as<T>() + grp * R * P, P, g.groups * R * P, samples);
    }
    col2im_kernel<T><<<grid_for(samples * x_sample), kThreads, 0, launch.stream()>>>(
        col.as<T>(), g, samples, dxv.typed<T>() + n0 * x_sample);
    launch.launched();
  }
}

template <class T>
void backward_weight(const ArrayView& xv, const ArrayView& dyv, const ArrayView& dwv,
                     const Conv2dGeometry& g, tandem::Stream& stream) {
  Launch launch(stream, "conv2d_backward_weight");
  cublasHandle_t handle = tandem::detail::cublas_handle(stream);
  const std::int64_t R = g.col_rows(), P = g.col_cols(), Kg = g.out_channels_per_group();
  const std::int64_t x_sample = g.in_channels * g.in_h * g.in_w;
  const std::int64_t dy_sample = g.out_channels * P;
  T* dw = dwv.typed<T>();
  if (g.batch == 0) {
    check_cuda(cudaMemsetAsync(dw, 0, static_cast<std::size_t>(dwv.num_elements()) * sizeof(T),
                               launch.stream()),
               "conv2d_backward_weight", launch.device());
    launch.launched();
    return;
  }
  const std::int64_t chunk = conv_chunk_samples(g, ConvPass::backward_weight, sizeof(T));
  // [col: groups * R rows of chunk * P | dy regrouped: out_channels rows of chunk * P]
  const std::size_t col_elements = static_cast<std::size_t>(chunk * g.groups * R * P);
  Scratch scratch(launch, (col_elements + static_cast<std::size_t>(chunk * dy_sample)) * sizeof(T));
  T* col = scratch.as<T>();
  T* dy_rows = col + col_elements;
  for (std::int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const std::int64_t samples = std::min(chunk, g.batch - n0);
    const std::int64_t columns = samples * P;  // the gemm's inner dimension
    im2col_rows_kernel<T><<<grid_for(samples * g.groups * R * P), kThreads, 0, launch.stream()>>>(
        xv.typed<const T>() + n0 * x_sample, g, samples, col);
    launch.launched();
    regroup_kernel<T><<<grid_for(samples * dy_sample), kThreads, 0, launch.stream()>>>(
        dyv.typed<const T>() + n0 * dy_sample, g.out_channels, samples, P, dy_rows);
    launch.launched();
    for (std::int64_t grp = 0; grp < g.groups; ++grp) {
      row_major_gemm<T>(launch, handle, Kg, R, columns,
                        Operand{dy_rows + grp * Kg * columns, columns, 0, false},
                        Operand{col + grp * R * columns, columns, 0, true}, T(n0 == 0 ? 0 : 1),
                        dw + grp * Kg * R, R, 0, 1);
    }
  }
}

// The bias gradient: one block per channel sums its batch x spatial elements in double (as the
// reductions accumulate), each thread a strided share, then the warps' sums by shuffles and the
// block's in a fixed order: the same bits on every run.
constexpr int kBiasThreads = 256;

template <class T>
__global__ void bias_gradient_kernel(const T* dy, T* dbias, std::int64_t batch,
                                     std::int64_t channels, std::int64_t spatial) {
  const std::int64_t c = blockIdx.x;
  const std::int64_t per_channel = batch * spatial;
  double sum = 0.0;
  for (std::int64_t i = threadIdx.x; i < per_channel; i += blockDim.x) {
    const std::int64_t n = i / spatial, p = i - n * spatial;
    sum += static_cast<double>(dy[(n * channels + c) * spatial + p]);
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  __shared__ double warp_sums[kBiasThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < kBiasThreads / 32; ++w) total += warp_sums[w];
    dbias[c] = static_cast<T>(total);
  }
}

}  // namespace

void conv2d_backward_bias(const ArrayView& dy, const ArrayView& dbias, tandem::Stream& stream) {
  const char* op = "conv2d_backward_bias";
  const ConvBiasShape s = conv_bias_shape(op, dy, dbias);
  if (s.channels == 0) return;
  Launch launch(stream, op);
  dispatch_floating(dy.dtype, op, [&]<class T>(T) {
    bias_gradient_kernel<T>
        <<<static_cast<unsigned>(s.channels), kBiasThreads, 0, launch.stream()>>>(
            dy.typed<const T>(), dbias.typed<T>(), s.batch, s.channels, s.spatial);
    launch.launched();
  });
}

void conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias, const ArrayView& y,
            const Conv2dGeometry& g, tandem::Stream& stream, ConvPath path) {
  if (y.num_elements() == 0) return;
  if (path == ConvPath::automatic && cudnn_conv2d(x, weight, bias, y, g, stream)) return;
  dispatch_floating(y.dtype, "conv2d",
                    [&]<class T>(T) { forward<T>(x, weight, bias, y, g, stream); });
}

void conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                          const Conv2dGeometry& g, tandem::Stream& stream, ConvPath path) {
  if (dx.num_elements() == 0) return;
  if (path == ConvPath::automatic && cudnn_conv2d_backward_data(dy, weight, dx, g, stream)) return;
  dispatch_floating(dx.dtype, "conv2d_backward_data",
                    [&]<class T>(T) { backward_data<T>(dy, weight, dx, g, stream); });
}

void conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                            const Conv2dGeometry& g, tandem::Stream& stream, ConvPath path) {
  if (dweight.num_elements() == 0) return;
  if (path == ConvPath::automatic && cudnn_conv2d_backward_weight(x, dy, dweight, g, stream)) {
    return;
  }
  dispatch_floating(dweight.dtype, "conv2d_backward_weight",
                    [&]<class T>(T) { backward_weight<T>(x, dy, dweight, g, stream); });
}

}  // namespace tandem::ops::cuda
