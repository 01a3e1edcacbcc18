// CPU convolution: im2col / col2im around single-threaded BLAS calls, parallel over blocks of
// samples.
//
// For sample n and group g, with R = col_rows() and P = out_h * out_w:
//   forward          y[n, g] (Kg x P)  = W[g] (Kg x R) . col(x[n, g]) (R x P)
//   backward data    dcol (R x P)      = W[g]^T . dy[n, g];   dx[n, g] = col2im(dcol)
//   backward weight  dW[g] (Kg x R)   += dy[n, g] . col(x[n, g])^T
#include "tandem/ops/cpu/convolution.h"

#include <cblas.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "common/floating_checks.h"
#include "parallel.h"
#include "tandem/ops/cpu/gemm.h"

namespace tandem::ops::cpu {

namespace {

// At most this many sample blocks: enough to fill a machine's cores, and a fixed number so
// the weight gradient's partial sums (one per block) do not depend on the thread count.
constexpr std::int64_t kMaxSampleBlocks = 16;

std::int64_t samples_per_block(std::int64_t batch) {
  const std::int64_t blocks = std::clamp<std::int64_t>(batch, 1, kMaxSampleBlocks);
  return (batch + blocks - 1) / blocks;
}

// Row-major C (m x n) = alpha * op(A) . op(B) + beta * C, one BLAS thread.
template <class T>
void blas(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
          std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  const auto op_a = ta ? CblasTrans : CblasNoTrans;
  const auto op_b = tb ? CblasTrans : CblasNoTrans;
  const auto i = [](std::int64_t v) { return static_cast<blasint>(v); };
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, op_a, op_b, i(m), i(n), i(k), 1.0f, a, i(lda), b, i(ldb), beta, c,
                i(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, op_a, op_b, i(m), i(n), i(k), 1.0, a, i(lda), b, i(ldb), beta, c,
                i(ldc));
  }
}

// A 1x1 kernel with stride 1 and no padding reads x as its own im2col matrix.
bool col_is_input(const Conv2dGeometry& g) {
  return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
         g.pad_w == 0;
}

// The output columns [begin, end) whose input column ow * stride + offset lies in [0, in):
// the others read padding. offset = kernel tap * dilation - padding.
struct ValidRange {
  std::int64_t begin = 0, end = 0;
};

ValidRange valid_columns(std::int64_t offset, std::int64_t stride, std::int64_t in,
                         std::int64_t out) {
  const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  ValidRange r;
  r.begin = offset >= 0 ? 0 : std::min(out, ceil_div(-offset, stride));
  r.end = in - offset <= 0 ? 0 : std::min(out, ceil_div(in - offset, stride));
  r.end = std::max(r.end, r.begin);
  return r;
}

// col (R x P) from the group's channels of one sample, `x` pointing at its first channel. Each
// row is a run of zeros, a strided (often contiguous) copy of an input row, and zeros.
template <class T>
void im2col(const T* x, const Conv2dGeometry& g, T* col) {
  const std::int64_t P = g.col_cols();
  for (std::int64_t c = 0; c < g.in_channels_per_group(); ++c) {
    const T* plane = x + c * g.in_h * g.in_w;
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        T* row = col + ((c * g.kernel_h + kh) * g.kernel_w + kw) * P;
        const std::int64_t w_offset = kw * g.dilation_w - g.pad_w;
        const ValidRange valid = valid_columns(w_offset, g.stride_w, g.in_w, g.out_w);
        for (std::int64_t oh = 0; oh < g.out_h; ++oh) {
          T* out = row + oh * g.out_w;
          const std::int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
          if (ih < 0 || ih >= g.in_h) {
            std::fill(out, out + g.out_w, T(0));
            continue;
          }
          const T* in = plane + ih * g.in_w;
          std::fill(out, out + valid.begin, T(0));
          if (g.stride_w == 1 && valid.begin < valid.end) {
            std::copy(in + valid.begin + w_offset, in + valid.end + w_offset, out + valid.begin);
          } else {
            for (std::int64_t ow = valid.begin; ow < valid.end; ++ow) {
              out[ow] = in[ow * g.stride_w + w_offset];
            }
          }
          std::fill(out + valid.end, out + g.out_w, T(0));
        }
      }
    }
  }
}

// dx (the group's channels of one sample, zeroed by the caller) += col2im(col).
template <class T>
void col2im(const T* col, const Conv2dGeometry& g, T* dx) {
  const std::int64_t P = g.col_cols();
  for (std::int64_t c = 0; c < g.in_channels_per_group(); ++c) {
    T* plane = dx + c * g.in_h * g.in_w;
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const T* row = col + ((c * g.kernel_h + kh) * g.kernel_w + kw) * P;
        const std::int64_t w_offset = kw * g.dilation_w - g.pad_w;
        const ValidRange valid = valid_columns(w_offset, g.stride_w, g.in_w, g.out_w);
        for (std::int64_t oh = 0; oh < g.out_h; ++oh) {
          const std::int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
          if (ih < 0 || ih >= g.in_h) continue;
          const T* in = row + oh * g.out_w;
          T* out = plane + ih * g.in_w;
          for (std::int64_t ow = valid.begin; ow < valid.end; ++ow) {
            out[ow * g.stride_w + w_offset] += in[ow];
          }
        }
      }
    }
  }
}

template <class T>
void forward(const ArrayView& xv, const ArrayView& wv, const ArrayView& bv, const ArrayView& yv,
             const Conv2dGeometry& g) {
  const T* x = xv.typed<const T>();
  const T* w = wv.typed<const T>();
  const T* bias = bv.typed<const T>();
  T* y = yv.typed<T>();
  const std::int64_t R = g.col_rows(), P = g.col_cols(), Kg = g.out_channels_per_group();
  const std::int64_t x_group = g.in_channels_per_group() * g.in_h * g.in_w;
  const std::int64_t x_sample = g.in_channels * g.in_h * g.in_w;
  const bool direct = col_is_input(g);
  parallel_blocks(g.batch, samples_per_block(g.batch),
                  [&](std::int64_t, std::int64_t n0, std::int64_t n1) {
                    std::vector<T> col(direct ? 0 : static_cast<std::size_t>(R * P));
                    for (std::int64_t n = n0; n < n1; ++n) {
                      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
                        const T* xg = x + n * x_sample + grp * x_group;
                        if (!direct) im2col(xg, g, col.data());
                        T* yg = y + (n * g.out_channels + grp * Kg) * P;
                        blas<T>(false, false, Kg, P, R, w + grp * Kg * R, R,
                                direct ? xg : col.data(), P, T(0), yg, P);
                      }
                      if (bias == nullptr) continue;
                      for (std::int64_t k = 0; k < g.out_channels; ++k) {
                        T* row = y + (n * g.out_channels + k) * P;
                        for (std::int64_t p = 0; p < P; ++p) row[p] += bias[k];
                      }
                    }
                  });
}

template <class T>
void backward_data(const ArrayView& dyv, const ArrayView& wv, const ArrayView& dxv,
                   const Conv2dGeometry& g) {
  const T* dy = dyv.typed<const T>();
  const T* w = wv.typed<const T>();
  T* dx = dxv.typed<T>();
  const std::int64_t R = g.col_rows(), P = g.col_cols(), Kg = g.out_channels_per_group();
  const std::int64_t x_group = g.in_channels_per_group() * g.in_h * g.in_w;
  const std::int64_t x_sample = g.in_channels * g.in_h * g.in_w;
  const bool direct = col_is_input(g);
  parallel_blocks(
      g.batch, samples_per_block(g.batch), [&](std::int64_t, std::int64_t n0, std::int64_t n1) {
        std::vector<T> col(direct ? 0 : static_cast<std::size_t>(R * P));
        for (std::int64_t n = n0; n < n1; ++n) {
          for (std::int64_t grp = 0; grp < g.groups; ++grp) {
            T* dxg = dx + n * x_sample + grp * x_group;
            const T* dyg = dy + (n * g.out_channels + grp * Kg) * P;
            if (direct) {  // dx[n, g] is the (R x P) product itself
              blas<T>(true, false, R, P, Kg, w + grp * Kg * R, R, dyg, P, T(0), dxg, P);
              continue;
            }
            blas<T>(true, false, R, P, Kg, w + grp * Kg * R, R, dyg, P, T(0), col.data(), P);
            std::fill(dxg, dxg + x_group, T(0));
            col2im(col.data(), g, dxg);
          }
        }
      });
}

template <class T>
void backward_weight(const ArrayView& xv, const ArrayView& dyv, const ArrayView& dwv,
                     const Conv2dGeometry& g) {
  const T* x = xv.typed<const T>();
  const T* dy = dyv.typed<const T>();
  T* dw = dwv.typed<T>();
  const std::int64_t R = g.col_rows(), P = g.col_cols(), Kg = g.out_channels_per_group();
  const std::int64_t x_group = g.in_channels_per_group() * g.in_h * g.in_w;
  const std::int64_t x_sample = g.in_channels * g.in_h * g.in_w;
  const std::int64_t w_size = g.out_channels * R;
  const bool direct = col_is_input(g);
  const std::int64_t block = samples_per_block(g.batch);
  std::vector<T> partial(static_cast<std::size_t>(num_blocks(g.batch, block) * w_size), T(0));
  parallel_blocks(g.batch, block, [&](std::int64_t b, std::int64_t n0, std::int64_t n1) {
    std::vector<T> col(direct ? 0 : static_cast<std::size_t>(R * P));
    T* sum = partial.data() + b * w_size;
    for (std::int64_t n = n0; n < n1; ++n) {
      for (std::int64_t grp = 0; grp < g.groups; ++grp) {
        const T* xg = x + n * x_sample + grp * x_group;
        if (!direct) im2col(xg, g, col.data());
        blas<T>(false, true, Kg, R, P, dy + (n * g.out_channels + grp * Kg) * P, P,
                direct ? xg : col.data(), P, T(1), sum + grp * Kg * R, R);
      }
    }
  });
  std::fill(dw, dw + w_size, T(0));
  for (std::int64_t b = 0; b < num_blocks(g.batch, block); ++b) {
    const T* sum = partial.data() + b * w_size;
    for (std::int64_t i = 0; i < w_size; ++i) dw[i] += sum[i];
  }
}

// dispatch_floating, with OpenBLAS set to one thread (once per process) first: the kernels
// call BLAS from inside their own parallel blocks.
template <class Fn>
void dispatch_floating_blas(DType dtype, const char* op, Fn&& fn) {
  dispatch_floating(dtype, op, [&]<class T>(T) {
    configure_blas_threads();
    fn(T{});
  });
}

}  // namespace

void conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias, const ArrayView& y,
            const Conv2dGeometry& g) {
  if (y.num_elements() == 0) return;
  dispatch_floating_blas(y.dtype, "conv2d", [&]<class T>(T) { forward<T>(x, weight, bias, y, g); });
}

void conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                          const Conv2dGeometry& g) {
  if (dx.num_elements() == 0) return;
  dispatch_floating_blas(dx.dtype, "conv2d_backward_data",
                         [&]<class T>(T) { backward_data<T>(dy, weight, dx, g); });
}

void conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                            const Conv2dGeometry& g) {
  if (dweight.num_elements() == 0) return;
  dispatch_floating_blas(dweight.dtype, "conv2d_backward_weight",
                         [&]<class T>(T) { backward_weight<T>(x, dy, dweight, g); });
}

}  // namespace tandem::ops::cpu
