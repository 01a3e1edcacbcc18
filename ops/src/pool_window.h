// One pooling window, as the CPU and the gpu(i) kernels both see it: the input rows and columns
// under output pixel (oh, ow), clipped to the input, and what average pooling divides by.
// Shared so that both backends pick the same maximum (the first one in row-major window order;
// a NaN counts as the maximum) and the same divisor.
#pragma once

#include <cstdint>

#include "tandem/ops/conv_geometry.h"
#include "tandem/ops/host_device.h"

namespace tandem::ops {

struct PoolWindow {
  std::int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;  // [h0, h1) x [w0, w1), inside the input
  std::int64_t divisor = 1;                     // for average pooling
};

TANDEM_HOST_DEVICE inline std::int64_t clamp_index(std::int64_t v, std::int64_t high) {
  return v < 0 ? 0 : (v > high ? high : v);
}

TANDEM_HOST_DEVICE inline PoolWindow pool_window(const Pool2dGeometry& g, std::int64_t oh,
                                                 std::int64_t ow) {
  const std::int64_t h_start = oh * g.stride_h - g.pad_h, w_start = ow * g.stride_w - g.pad_w;
  PoolWindow window;
  window.h0 = clamp_index(h_start, g.in_h);
  window.h1 = clamp_index(h_start + g.kernel_h, g.in_h);
  window.w0 = clamp_index(w_start, g.in_w);
  window.w1 = clamp_index(w_start + g.kernel_w, g.in_w);
  window.divisor = g.count_include_pad ? g.kernel_h * g.kernel_w
                                       : (window.h1 - window.h0) * (window.w1 - window.w0);
  return window;
}

// The offset (h * in_w + w) in `plane` of the window's maximum. The front end guarantees every
// window holds at least one input element (padding <= kernel / 2).
template <class T>
TANDEM_HOST_DEVICE std::int64_t window_argmax(const T* plane, const Pool2dGeometry& g,
                                              const PoolWindow& window) {
  std::int64_t best = window.h0 * g.in_w + window.w0;
  T best_value = plane[best];
  for (std::int64_t h = window.h0; h < window.h1; ++h) {
    for (std::int64_t w = window.w0; w < window.w1; ++w) {
      const T v = plane[h * g.in_w + w];
      // A NaN replaces a number, and nothing replaces a NaN.
      if (v > best_value || (v != v && best_value == best_value)) {
        best = h * g.in_w + w;
        best_value = v;
      }
    }
  }
  return best;
}

template <class T>
TANDEM_HOST_DEVICE T window_average(const T* plane, const Pool2dGeometry& g,
                                    const PoolWindow& window) {
  T sum = 0;
  for (std::int64_t h = window.h0; h < window.h1; ++h) {
    for (std::int64_t w = window.w0; w < window.w1; ++w) sum += plane[h * g.in_w + w];
  }
  return sum / static_cast<T>(window.divisor);
}

}  // namespace tandem::ops
