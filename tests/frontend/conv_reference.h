// Direct-loop references for convolution (forward and both gradients) and pooling, exactly as
// the definitions in tandem/nd/convolution.h and tandem/nd/pooling.h read. Each value comes
// with the sum of the magnitudes it added, for a rounding tolerance.
#pragma once

#include <limits>

#include "frontend_test_util.h"

namespace tandem::testing {

struct Reference {
  Host values;
  std::vector<double> magnitude;  // sum of |terms| per output element
};

// Calls visit(x index, w index, y index) for every term x * w of y = conv2d(x, w): the one loop
// nest that the forward and both backward references share.
template <class Visit>
void for_each_conv_term(const Shape& x, const Shape& w, const nd::Conv2dOptions& o, Visit&& visit) {
  const std::int64_t N = x[0], C = x[1], H = x[2], W = x[3];
  const std::int64_t O = w[0], Cg = w[1], KH = w[2], KW = w[3];
  const Shape out = nd::conv2d_output_shape(x, w, o);
  const std::int64_t OH = out[2], OW = out[3], Og = O / o.groups;
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t k = 0; k < O; ++k) {
      const std::int64_t c0 = (k / Og) * Cg;
      for (std::int64_t oh = 0; oh < OH; ++oh) {
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const std::int64_t yi = ((n * O + k) * OH + oh) * OW + ow;
          for (std::int64_t c = 0; c < Cg; ++c) {
            for (std::int64_t kh = 0; kh < KH; ++kh) {
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t ih = oh * o.stride.h - o.padding.h + kh * o.dilation.h;
                const std::int64_t iw = ow * o.stride.w - o.padding.w + kw * o.dilation.w;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                visit(((n * C + c0 + c) * H + ih) * W + iw, ((k * Cg + c) * KH + kh) * KW + kw, yi);
              }
            }
          }
        }
      }
    }
  }
}

inline Reference reference_conv2d(const Host& x, const Host& w, const Host* bias,
                                  const nd::Conv2dOptions& o) {
  const Shape out = nd::conv2d_output_shape(x.shape, w.shape, o);
  const auto size = static_cast<std::size_t>(out.num_elements());
  Reference r{Host{out, std::vector<double>(size)}, std::vector<double>(size)};
  // Each output starts at its bias; its terms come in (c, kh, kw) order, as a direct loop adds.
  if (bias != nullptr) {
    const std::int64_t O = w.shape[0], plane = out[2] * out[3];
    for (std::size_t i = 0; i < size; ++i) {
      const double b = bias->at((static_cast<std::int64_t>(i) / plane) % O);
      r.values.values[i] = b;
      r.magnitude[i] = std::fabs(b);
    }
  }
  for_each_conv_term(x.shape, w.shape, o, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    const double term = x.at(xi) * w.at(wi);
    r.values.values[static_cast<std::size_t>(yi)] += term;
    r.magnitude[static_cast<std::size_t>(yi)] += std::fabs(term);
  });
  return r;
}

// dL/dx and dL/dw of L = sum(conv2d(x, w) * dy), term by term.
inline Reference reference_conv2d_backward_data(const Host& dy, const Host& w, const Shape& x,
                                                const nd::Conv2dOptions& o) {
  const auto size = static_cast<std::size_t>(x.num_elements());
  Reference r{Host{x, std::vector<double>(size)}, std::vector<double>(size)};
  for_each_conv_term(x, w.shape, o, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    const double term = w.at(wi) * dy.at(yi);
    r.values.values[static_cast<std::size_t>(xi)] += term;
    r.magnitude[static_cast<std::size_t>(xi)] += std::fabs(term);
  });
  return r;
}

inline Reference reference_conv2d_backward_weight(const Host& dy, const Host& x, const Shape& w,
                                                  const nd::Conv2dOptions& o) {
  const auto size = static_cast<std::size_t>(w.num_elements());
  Reference r{Host{w, std::vector<double>(size)}, std::vector<double>(size)};
  for_each_conv_term(x.shape, w, o, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
    const double term = x.at(xi) * dy.at(yi);
    r.values.values[static_cast<std::size_t>(wi)] += term;
    r.magnitude[static_cast<std::size_t>(wi)] += std::fabs(term);
  });
  return r;
}

inline Reference reference_pool2d(const Host& x, const nd::Pool2dOptions& o, bool max) {
  const std::int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const Shape out = nd::pool2d_output_shape(x.shape, o);
  const nd::Size2d stride{o.stride.h == 0 ? o.kernel.h : o.stride.h,
                          o.stride.w == 0 ? o.kernel.w : o.stride.w};
  Reference r{Host{out, std::vector<double>(static_cast<std::size_t>(out.num_elements()))},
              std::vector<double>(static_cast<std::size_t>(out.num_elements()))};
  std::size_t i = 0;
  for (std::int64_t p = 0; p < N * C; ++p) {
    for (std::int64_t oh = 0; oh < out[2]; ++oh) {
      for (std::int64_t ow = 0; ow < out[3]; ++ow, ++i) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0, magnitude = 0;
        std::int64_t inside = 0;
        for (std::int64_t kh = 0; kh < o.kernel.h; ++kh) {
          for (std::int64_t kw = 0; kw < o.kernel.w; ++kw) {
            const std::int64_t ih = oh * stride.h - o.padding.h + kh;
            const std::int64_t iw = ow * stride.w - o.padding.w + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x.at((p * H + ih) * W + iw);
            best = std::max(best, v);
            sum += v;
            magnitude += std::fabs(v);
            ++inside;
          }
        }
        const double divisor =
            static_cast<double>(o.count_include_pad ? o.kernel.h * o.kernel.w : inside);
        r.values.values[i] = max ? best : sum / divisor;
        r.magnitude[i] = max ? std::fabs(best) : magnitude / divisor;
      }
    }
  }
  return r;
}

// CHECKs shape and values: |got - expected| <= eps(dtype) * terms * magnitude (+ a tiny floor).
inline void check_reference(const NDArray& actual, const Reference& expected, double terms,
                            const std::string& what) {
  INFO(what);
  REQUIRE(actual.shape().to_string() == expected.values.shape.to_string());
  const auto got = actual.to_vector<double>();
  const double eps = actual.dtype() == nd::float32 ? 1.2e-7 : 2.3e-16;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tolerance = 4 * eps * (terms + 2) * (expected.magnitude[i] + 1e-3);
    if (!(std::fabs(got[i] - expected.values.values[i]) <= tolerance) && bad++ < 5) {
      FAIL_CHECK("element " << i << ": got " << got[i] << ", expected "
                            << expected.values.values[i]);
    }
  }
  CHECK(bad == 0);
}

}  // namespace tandem::testing
