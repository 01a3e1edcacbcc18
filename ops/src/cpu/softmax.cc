// CPU softmax over rows: rows in fixed parallel blocks, each row serial and in order.
#include "tandem/ops/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/floating_checks.h"
#include "parallel.h"

namespace tandem::ops::cpu {

namespace {

std::int64_t row_count(const ArrayView& v) {
  return v.ndim() == 0 ? 1 : v.num_elements() / std::max<std::int64_t>(1, v.shape[v.ndim() - 1]);
}

std::int64_t class_count(const ArrayView& v) {
  return v.ndim() == 0 ? 1 : v.shape[v.ndim() - 1];
}

template <class Fn>
void for_each_row(std::int64_t rows, std::int64_t classes, Fn&& fn) {
  const std::int64_t per_block =
      std::max<std::int64_t>(1, kElementwiseBlock / std::max<std::int64_t>(1, classes));
  parallel_blocks(rows, per_block, [&](std::int64_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) fn(r);
  });
}

// The row maximum (a NaN wins) and sum(exp(x - max)).
template <class T>
void row_stats(const T* x, std::int64_t classes, T& max, T& sum) {
  max = x[0];
  for (std::int64_t c = 1; c < classes; ++c) {
    if (x[c] > max || std::isnan(x[c])) max = x[c];
  }
  sum = T(0);
  for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(x[c] - max);
}

}  // namespace

void softmax_rows(const ArrayView& in, const ArrayView& out, bool log) {
  const std::int64_t rows = row_count(out), classes = class_count(out);
  if (rows == 0 || classes == 0) return;
  dispatch_floating(out.dtype, log ? "log_softmax" : "softmax", [&]<class T>(T) {
    const T* x = in.typed<const T>();
    T* y = out.typed<T>();
    for_each_row(rows, classes, [&](std::int64_t r) {
      const T* xr = x + r * classes;
      T* yr = y + r * classes;
      T max, sum;
      row_stats(xr, classes, max, sum);
      if (log) {
        const T log_sum = std::log(sum);
        for (std::int64_t c = 0; c < classes; ++c) yr[c] = (xr[c] - max) - log_sum;
      } else {
        for (std::int64_t c = 0; c < classes; ++c) yr[c] = std::exp(xr[c] - max) / sum;
      }
    });
  });
}

void softmax_rows_backward(const ArrayView& y, const ArrayView& dy, const ArrayView& dx, bool log) {
  const std::int64_t rows = row_count(dx), classes = class_count(dx);
  if (rows == 0 || classes == 0) return;
  dispatch_floating(dx.dtype, log ? "log_softmax_backward" : "softmax_backward", [&]<class T>(T) {
    const T* yv = y.typed<const T>();
    const T* g = dy.typed<const T>();
    T* d = dx.typed<T>();
    for_each_row(rows, classes, [&](std::int64_t r) {
      const T* yr = yv + r * classes;
      const T* gr = g + r * classes;
      T* dr = d + r * classes;
      T dot(0);
      if (log) {
        for (std::int64_t c = 0; c < classes; ++c) dot += gr[c];
        for (std::int64_t c = 0; c < classes; ++c) dr[c] = gr[c] - std::exp(yr[c]) * dot;
      } else {
        for (std::int64_t c = 0; c < classes; ++c) dot += gr[c] * yr[c];
        for (std::int64_t c = 0; c < classes; ++c) dr[c] = yr[c] * (gr[c] - dot);
      }
    });
  });
}

void softmax_cross_entropy_rows(const ArrayView& logits, const ArrayView& labels,
                                const ArrayView& loss, const ArrayView& probabilities) {
  const char* op = "softmax_cross_entropy";
  check_int32_labels(op, labels);
  const std::int64_t rows = loss.num_elements(), classes = class_count(logits);
  if (rows == 0) return;
  dispatch_floating(logits.dtype, op, [&]<class T>(T) {
    const T* x = logits.typed<const T>();
    const std::int32_t* label = labels.typed<const std::int32_t>();
    T* l = loss.typed<T>();
    T* p = probabilities.data != nullptr ? probabilities.typed<T>() : nullptr;
    for_each_row(rows, classes, [&](std::int64_t r) {
      if (classes == 0) {
        l[r] = T(0);
        return;
      }
      const T* xr = x + r * classes;
      T max, sum;
      row_stats(xr, classes, max, sum);
      const std::int64_t k = label[r];
      l[r] = k >= 0 && k < classes ? -((xr[k] - max) - std::log(sum)) : T(0);
      if (p != nullptr) {
        T* pr = p + r * classes;
        for (std::int64_t c = 0; c < classes; ++c) pr[c] = std::exp(xr[c] - max) / sum;
      }
    });
  });
}

void softmax_cross_entropy_backward(const ArrayView& probabilities, const ArrayView& labels,
                                    const ArrayView& head_grad, const ArrayView& dlogits) {
  const char* op = "softmax_cross_entropy_backward";
  check_int32_labels(op, labels);
  const std::int64_t rows = row_count(dlogits), classes = class_count(dlogits);
  if (rows == 0 || classes == 0) return;
  dispatch_floating(dlogits.dtype, op, [&]<class T>(T) {
    const T* p = probabilities.typed<const T>();
    const std::int32_t* label = labels.typed<const std::int32_t>();
    const T* g = head_grad.typed<const T>();
    T* d = dlogits.typed<T>();
    const std::int64_t g_stride = head_grad.ndim() == 0 ? 0 : head_grad.strides[0];
    for_each_row(rows, classes, [&](std::int64_t r) {
      const T* pr = p + r * classes;
      T* dr = d + r * classes;
      const std::int64_t k = label[r];
      // A label outside [0, classes) has loss 0 whatever the logits: its row's gradient is 0
      // too (an "ignore" label trains nothing).
      const bool ignored = k < 0 || k >= classes;
      for (std::int64_t c = 0; c < classes; ++c) {
        dr[c] = ignored ? T(0) : g[r * g_stride] * (pr[c] - (c == k ? T(1) : T(0)));
      }
    });
  });
}

}  // namespace tandem::ops::cpu
