// Batch normalization in training mode on the CPU, over dense N x C x S... views (S: the
// product of the spatial axes, 1 for an N x C array); the per-channel arrays are dense vectors
// of C. Channels run in parallel, each channel serially and in order, so the bits do not depend
// on the thread count. Sums are kept in double, shifted by the channel's first element (a
// one-pass variance that stays accurate when the mean is large against the spread).
//
// batch_norm_forward: the batch's mean and biased variance per channel, y = (x - mean) *
// inv_std * gamma + beta with inv_std = 1 / sqrt(var + eps), saved_mean and saved_inv_std
// written, running_mean and running_var updated in place: r = momentum * r + (1 - momentum) *
// batch. batch_norm_backward: with xhat = (x - mean) * inv_std and M = N * S, dbeta = sum(dy),
// dgamma = sum(dy * xhat), dx = gamma * inv_std * (dy - dbeta / M - xhat * dgamma / M); an
// output with data == nullptr is not formed. Every floating view shares one dtype (float32 or
// float64); x has at least one element per channel.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/batch_norm_geometry.h"
#include "common/floating_checks.h"
#include "kernel_declarations.h"
#include "parallel.h"

namespace tandem::ops::cpu {

namespace {

// Calls fn(c) for every channel; a block holds enough channels for kElementwiseBlock elements.
template <class Fn>
void for_each_channel(const BatchNormGeometry& g, Fn&& fn) {
  const std::int64_t per_block =
      std::max<std::int64_t>(1, kElementwiseBlock / std::max<std::int64_t>(1, g.per_channel()));
  parallel_blocks(g.channels, per_block, [&](std::int64_t, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) fn(c);
  });
}

// Calls fn(offset, count) for each of channel c's runs of S contiguous elements.
template <class Fn>
void for_each_run(const BatchNormGeometry& g, std::int64_t c, Fn&& fn) {
  for (std::int64_t n = 0; n < g.batch; ++n) fn((n * g.channels + c) * g.spatial, g.spatial);
}

}  // namespace

void batch_norm_forward(const ArrayView& x, const ArrayView& gamma, const ArrayView& beta,
                        const ArrayView& running_mean, const ArrayView& running_var,
                        const ArrayView& y, const ArrayView& saved_mean,
                        const ArrayView& saved_inv_std, double momentum, double eps) {
  const char* op = "batch_norm";
  const BatchNormGeometry g = batch_norm_forward_geometry(x, gamma, beta, running_mean, running_var,
                                                          y, saved_mean, saved_inv_std);
  if (g.per_channel() == 0) return;  // the front end does not push an empty batch
  const auto count = static_cast<double>(g.per_channel());
  dispatch_floating(x.dtype, op, [&]<class T>(T) {
    const T* xv = x.typed<const T>();
    T* yv = y.typed<T>();
    for_each_channel(g, [&](std::int64_t c) {
      const double shift = static_cast<double>(xv[c * g.spatial]);
      double sum = 0, squares = 0;
      for_each_run(g, c, [&](std::int64_t offset, std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) {
          const double d = static_cast<double>(xv[offset + i]) - shift;
          sum += d;
          squares += d * d;
        }
      });
      const double centered_mean = sum / count;
      const double mean = shift + centered_mean;
      const double variance = std::max(0.0, squares / count - centered_mean * centered_mean);
      const double inv_std = 1.0 / std::sqrt(variance + eps);
      // (x - mean) first, in T: a large mean cancels before the scale, as in the unfused ops.
      const T mean_t = static_cast<T>(mean);
      const T scale = static_cast<T>(inv_std * static_cast<double>(gamma.typed<const T>()[c]));
      const T shift_out = beta.typed<const T>()[c];
      for_each_run(g, c, [&](std::int64_t offset, std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) {
          yv[offset + i] = (xv[offset + i] - mean_t) * scale + shift_out;
        }
      });
      saved_mean.typed<T>()[c] = static_cast<T>(mean);
      saved_inv_std.typed<T>()[c] = static_cast<T>(inv_std);
      T& rm = running_mean.typed<T>()[c];
      T& rv = running_var.typed<T>()[c];
      rm = static_cast<T>(momentum * static_cast<double>(rm) + (1.0 - momentum) * mean);
      rv = static_cast<T>(momentum * static_cast<double>(rv) + (1.0 - momentum) * variance);
    });
  });
}

void batch_norm_backward(const ArrayView& x, const ArrayView& dy, const ArrayView& gamma,
                         const ArrayView& saved_mean, const ArrayView& saved_inv_std,
                         const ArrayView& dx, const ArrayView& dgamma, const ArrayView& dbeta) {
  const char* op = "batch_norm_backward";
  const BatchNormGeometry g =
      batch_norm_backward_geometry(x, dy, gamma, saved_mean, saved_inv_std, dx, dgamma, dbeta);
  if (g.per_channel() == 0) return;
  const auto count = static_cast<double>(g.per_channel());
  dispatch_floating(x.dtype, op, [&]<class T>(T) {
    const T* xv = x.typed<const T>();
    const T* gv = dy.typed<const T>();
    for_each_channel(g, [&](std::int64_t c) {
      const double mean = static_cast<double>(saved_mean.typed<const T>()[c]);
      const double inv_std = static_cast<double>(saved_inv_std.typed<const T>()[c]);
      double sum_dy = 0, sum_dy_xhat = 0;
      for_each_run(g, c, [&](std::int64_t offset, std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) {
          const double d = static_cast<double>(gv[offset + i]);
          sum_dy += d;
          sum_dy_xhat += d * (static_cast<double>(xv[offset + i]) - mean) * inv_std;
        }
      });
      if (dbeta.data != nullptr) dbeta.typed<T>()[c] = static_cast<T>(sum_dy);
      if (dgamma.data != nullptr) dgamma.typed<T>()[c] = static_cast<T>(sum_dy_xhat);
      if (dx.data == nullptr) return;
      // dx = k * (dy - a - (x - mean) * inv_std * b), k = gamma * inv_std, a and b the means.
      const double a = sum_dy / count, b = sum_dy_xhat / count;
      const T k = static_cast<T>(static_cast<double>(gamma.typed<const T>()[c]) * inv_std);
      const T a_t = static_cast<T>(a), mean_t = static_cast<T>(mean);
      const T x_scale = static_cast<T>(inv_std * b);
      T* dv = dx.typed<T>();
      for_each_run(g, c, [&](std::int64_t offset, std::int64_t n) {
        for (std::int64_t i = 0; i < n; ++i) {
          dv[offset + i] = (gv[offset + i] - a_t - (xv[offset + i] - mean_t) * x_scale) * k;
        }
      });
    });
  });
}

}  // namespace tandem::ops::cpu
