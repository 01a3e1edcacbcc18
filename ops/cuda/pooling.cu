// Pooling on a gpu(i). The window arithmetic is ops/src/pool_window.h, shared with the CPU.
#include "../src/pool_window.h"
#include "common/floating_checks.h"
#include "launch.cuh"
#include "tandem/ops/cuda/pooling.h"

namespace tandem::ops::cuda {

namespace {

template <class T, bool Max>
__global__ void pool_kernel(const T* x, Pool2dGeometry g, T* y, std::int64_t total) {
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    const std::int64_t ow = e % g.out_w, oh = (e / g.out_w) % g.out_h;
    const std::int64_t plane = e / (g.out_w * g.out_h);
    const T* in = x + plane * g.in_h * g.in_w;
    const PoolWindow window = pool_window(g, oh, ow);
    if constexpr (Max) {
      y[e] = in[window_argmax(in, g, window)];
    } else {
      y[e] = window_average(in, g, window);
    }
  }
}

// The outputs whose windows cover input row (or column) i: [first, last].
__device__ inline void covering(std::int64_t i, std::int64_t pad, std::int64_t kernel,
                                std::int64_t stride, std::int64_t out, std::int64_t& first,
                                std::int64_t& last) {
  const std::int64_t low = i + pad - kernel + 1;  // window start >= low
  first = low <= 0 ? 0 : (low + stride - 1) / stride;
  last = (i + pad) / stride;
  if (last > out - 1) last = out - 1;
}

// One thread per input element: the sum of the output gradients routed to it.
template <class T, bool Max>
__global__ void pool_backward_kernel(const T* x, const T* dy, Pool2dGeometry g, T* dx,
                                     std::int64_t total) {
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    const std::int64_t iw = e % g.in_w, ih = (e / g.in_w) % g.in_h;
    const std::int64_t plane = e / (g.in_w * g.in_h);
    const T* grad = dy + plane * g.out_h * g.out_w;
    std::int64_t oh0, oh1, ow0, ow1;
    covering(ih, g.pad_h, g.kernel_h, g.stride_h, g.out_h, oh0, oh1);
    covering(iw, g.pad_w, g.kernel_w, g.stride_w, g.out_w, ow0, ow1);
    T sum = 0;
    for (std::int64_t oh = oh0; oh <= oh1; ++oh) {
      for (std::int64_t ow = ow0; ow <= ow1; ++ow) {
        const PoolWindow window = pool_window(g, oh, ow);
        if constexpr (Max) {
          const T* in = x + plane * g.in_h * g.in_w;
          if (window_argmax(in, g, window) == ih * g.in_w + iw) sum += grad[oh * g.out_w + ow];
        } else {
          sum += grad[oh * g.out_w + ow] / static_cast<T>(window.divisor);
        }
      }
    }
    dx[e] = sum;
  }
}

template <bool Max>
void forward(const char* op, const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g,
             tandem::Stream& stream) {
  const std::int64_t total = y.num_elements();
  if (total == 0) return;
  Launch launch(stream, op);
  dispatch_floating(y.dtype, op, [&]<class T>(T) {
    pool_kernel<T, Max><<<grid_for(total), kThreads, 0, launch.stream()>>>(x.typed<const T>(), g,
                                                                           y.typed<T>(), total);
    launch.launched();
  });
}

template <bool Max>
void backward(const char* op, const ArrayView& x, const ArrayView& dy, const ArrayView& dx,
              const Pool2dGeometry& g, tandem::Stream& stream) {
  const std::int64_t total = dx.num_elements();
  if (total == 0) return;
  Launch launch(stream, op);
  dispatch_floating(dx.dtype, op, [&]<class T>(T) {
    pool_backward_kernel<T, Max><<<grid_for(total), kThreads, 0, launch.stream()>>>(
        x.typed<const T>(), dy.typed<const T>(), g, dx.typed<T>(), total);
    launch.launched();
  });
}

}  // namespace

void max_pool2d(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g,
                tandem::Stream& stream) {
  forward<true>("max_pool2d", x, y, g, stream);
}

void avg_pool2d(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g,
                tandem::Stream& stream) {
  forward<false>("avg_pool2d", x, y, g, stream);
}

void max_pool2d_backward(const ArrayView& x, const ArrayView& dy, const ArrayView& dx,
                         const Pool2dGeometry& g, tandem::Stream& stream) {
  backward<true>("max_pool2d_backward", x, dy, dx, g, stream);
}

void avg_pool2d_backward(const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g,
                         tandem::Stream& stream) {
  backward<false>("avg_pool2d_backward", ArrayView{}, dy, dx, g, stream);
}

}  // namespace tandem::ops::cuda
