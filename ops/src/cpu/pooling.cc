// CPU pooling: one (sample, channel) plane at a time, planes in fixed parallel blocks. The
// backward kernels scatter into their own plane of dx only, so blocks never share an output.
#include "tandem/ops/cpu/pooling.h"

#include <algorithm>

#include "../pool_window.h"
#include "common/floating_checks.h"
#include "parallel.h"

namespace tandem::ops::cpu {

namespace {

// Planes per parallel block: about kElementwiseBlock window reads each.
std::int64_t planes_per_block(const Pool2dGeometry& g) {
  const std::int64_t per_plane =
      std::max<std::int64_t>(1, g.out_h * g.out_w * g.kernel_h * g.kernel_w);
  return std::max<std::int64_t>(1, kElementwiseBlock / per_plane);
}

template <class Fn>
void for_each_plane(const Pool2dGeometry& g, Fn&& fn) {
  parallel_blocks(g.batch * g.channels, planes_per_block(g),
                  [&](std::int64_t, std::int64_t p0, std::int64_t p1) {
                    for (std::int64_t p = p0; p < p1; ++p) fn(p);
                  });
}

// y[p, oh, ow] = window_value(plane p of x, window (oh, ow)) for every output element.
template <class T, class WindowValue>
void pool_forward(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g,
                  WindowValue&& window_value) {
  const std::int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  for_each_plane(g, [&](std::int64_t p) {
    const T* in = x.typed<const T>() + p * in_plane;
    T* out = y.typed<T>() + p * out_plane;
    for (std::int64_t oh = 0; oh < g.out_h; ++oh) {
      for (std::int64_t ow = 0; ow < g.out_w; ++ow) {
        out[oh * g.out_w + ow] = window_value(in, pool_window(g, oh, ow));
      }
    }
  });
}

// Zeroes plane p of dx, then calls scatter(p, plane p of dx, window, dy of that window) for its
// windows in row-major order: overlapping windows add into dx in a fixed order.
template <class T, class Scatter>
void pool_backward(const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g,
                   Scatter&& scatter) {
  const std::int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  for_each_plane(g, [&](std::int64_t p) {
    const T* grad = dy.typed<const T>() + p * out_plane;
    T* out = dx.typed<T>() + p * in_plane;
    std::fill(out, out + in_plane, T(0));
    for (std::int64_t oh = 0; oh < g.out_h; ++oh) {
      for (std::int64_t ow = 0; ow < g.out_w; ++ow) {
        scatter(p, out, pool_window(g, oh, ow), grad[oh * g.out_w + ow]);
      }
    }
  });
}

}  // namespace

void max_pool2d(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g) {
  dispatch_floating(y.dtype, "max_pool2d", [&]<class T>(T) {
    pool_forward<T>(x, y, g, [&](const T* in, const PoolWindow& window) {
      return in[window_argmax(in, g, window)];
    });
  });
}

void avg_pool2d(const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g) {
  dispatch_floating(y.dtype, "avg_pool2d", [&]<class T>(T) {
    pool_forward<T>(x, y, g, [&](const T* in, const PoolWindow& window) {
      return window_average(in, g, window);
    });
  });
}

void max_pool2d_backward(const ArrayView& x, const ArrayView& dy, const ArrayView& dx,
                         const Pool2dGeometry& g) {
  dispatch_floating(dx.dtype, "max_pool2d_backward", [&]<class T>(T) {
    pool_backward<T>(dy, dx, g, [&](std::int64_t p, T* out, const PoolWindow& window, T grad) {
      const T* in = x.typed<const T>() + p * g.in_h * g.in_w;
      out[window_argmax(in, g, window)] += grad;
    });
  });
}

void avg_pool2d_backward(const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g) {
  dispatch_floating(dx.dtype, "avg_pool2d_backward", [&]<class T>(T) {
    pool_backward<T>(dy, dx, g, [&](std::int64_t, T* out, const PoolWindow& window, T grad) {
      const T share = grad / static_cast<T>(window.divisor);
      for (std::int64_t h = window.h0; h < window.h1; ++h) {
        for (std::int64_t w = window.w0; w < window.w1; ++w) out[h * g.in_w + w] += share;
      }
    });
  });
}

}  // namespace tandem::ops::cpu
