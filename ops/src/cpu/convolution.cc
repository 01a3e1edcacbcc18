// CPU convolution: im2col / col2im around a few fat single-threaded BLAS calls.
//
// The batch goes in chunks of nc samples (conv_plan.h). For a chunk, with R = col_rows() (one
// group's rows), P = out_h * out_w and Kg = out_channels_per_group(), the samples sit side by
// side in the columns: column n * P + p of
//   col (in_channels * taps x nc * P)   is sample n's im2col column p (group g: rows g * R...)
//   dyc (out_channels x nc * P)         is dy[n, :, p], regrouped channel-major
// and per group g:
//   forward          yc (Kg x ncP)      = W[g] (Kg x R) . col[g] (R x ncP);  y[n] = yc's columns
//   backward data    dcol (R x ncP)     = W[g]^T . dyc[g];                   dx[n] = col2im
//   backward weight  dW[g] (Kg x R)    (+)= dyc[g] . col[g]^T    (beta = 1 after the first chunk)
// A chunk is a gather (im2col, dy regrouped), the gemm, and a scatter (or col2im). The thin
// dimension of one sample's gemm (P: 16 columns at ResNet-18's last stage) becomes nc * P, and
// the weight gradient is one rank-ncP update per chunk instead of one rank-P update per sample.
//
// Forward and the data gradient take the fewest samples per chunk that make the gemm about 256
// columns wide (one sample when P >= 256, so nothing is gathered or scattered for the output);
// with 8 chunks or more, the chunks run side by side, one task each, each in cache. With fewer
// (the late stages at small batches), and always for the weight gradient (its chunks, as large
// as 4 MiB of scratch allows, add up into dW in order), the chunks run in order, each step a
// parallel step: one task per sample for the gather and scatter, one per output tile of the gemm
// (conv_plan.h's grid; the weight gradient's tiles are tiles of dW over the chunk's whole inner
// dimension, so there are no partial sums of dW).
//
// Chunks, modes and tiles depend on the geometry only, so results are the same bits on any
// number of threads.
#include "tandem/ops/cpu/convolution.h"

#include <cblas.h>

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "common/conv_bias.h"
#include "common/floating_checks.h"
#include "conv_plan.h"
#include "kernel_declarations.h"
#include "parallel.h"
#include "tandem/ops/cpu/gemm.h"

namespace tandem::ops::cpu {

namespace {

// Row-major C (m x n) = op(A) . op(B) + beta * C, one BLAS thread.
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

// Scratch without the zero fill of std::vector: every element is written before it is read.
template <class T>
std::unique_ptr<T[]> scratch(std::int64_t elements) {
  return std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(elements));
}

// Calls body(group, r0, r1, c0, c1) for every tile of `grid` over an m x n output, for each
// group, as one parallel step.
template <class Body>
void parallel_tiles(std::int64_t groups, std::int64_t m, std::int64_t n, const TileGrid& grid,
                    Body&& body) {
  parallel_blocks(groups * grid.tiles(), 1, [&](std::int64_t, std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t group = t / grid.tiles(), tile = t % grid.tiles();
      const std::int64_t r0 = (tile / grid.col_blocks) * grid.tile_rows;
      const std::int64_t c0 = (tile % grid.col_blocks) * grid.tile_cols;
      const std::int64_t r1 = std::min(m, r0 + grid.tile_rows);
      const std::int64_t c1 = std::min(n, c0 + grid.tile_cols);
      if (r0 < r1 && c0 < c1) body(group, r0, r1, c0, c1);
    }
  });
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

// One sample's im2col (in_channels * taps rows of P columns) at `col`, rows `ld` apart, `x`
// pointing at the sample. Each row is a run of zeros, a strided (often contiguous) copy of an
// input row, and zeros.
template <class T>
void im2col(const T* x, const Conv2dGeometry& g, T* col, std::int64_t ld) {
  for (std::int64_t c = 0; c < g.in_channels; ++c) {
    const T* plane = x + c * g.in_h * g.in_w;
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        T* row = col + ((c * g.kernel_h + kh) * g.kernel_w + kw) * ld;
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

// dx (one sample, zeroed by the caller) += col2im of its columns at `col`, rows `ld` apart.
template <class T>
void col2im(const T* col, std::int64_t ld, const Conv2dGeometry& g, T* dx) {
  for (std::int64_t c = 0; c < g.in_channels; ++c) {
    T* plane = dx + c * g.in_h * g.in_w;
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const T* row = col + ((c * g.kernel_h + kh) * g.kernel_w + kw) * ld;
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

// Sample n's (channels x P) block of an NCHW array, as columns [n * P, (n + 1) * P) of a
// (channels x ld) matrix; and back.
template <class T>
void gather_sample(const T* sample, std::int64_t channels, std::int64_t P, T* matrix,
                   std::int64_t ld) {
  for (std::int64_t k = 0; k < channels; ++k) std::copy_n(sample + k * P, P, matrix + k * ld);
}

// Sizes every direction shares, and how its chunks run (conv_plan.h).
struct ConvSizes {
  std::int64_t R, P, Kg, rows, x_sample, y_sample, chunk;
  bool parallel_chunks;

  ConvSizes(const Conv2dGeometry& g, std::size_t element, ConvDirection direction)
      : R(g.col_rows()),
        P(g.col_cols()),
        Kg(g.out_channels_per_group()),
        rows(g.in_channels * g.kernel_h * g.kernel_w),
        x_sample(g.in_channels * g.in_h * g.in_w),
        y_sample(g.out_channels * g.col_cols()),
        chunk(conv_chunk_samples(g, element, direction)),
        parallel_chunks(conv_chunks_in_parallel(g, element, direction)) {}
};

// Calls body(n0, nc, serial) for each chunk [n0, n0 + nc): side by side, one task each, when
// `parallel` (serial = true: the body runs its steps in its own task), else in order (serial =
// false: the body runs each of its steps as a parallel step).
template <class Body>
void for_each_chunk(std::int64_t batch, std::int64_t chunk, bool parallel, Body&& body) {
  if (parallel) {
    parallel_blocks(batch, chunk, [&](std::int64_t, std::int64_t n0, std::int64_t n1) {
      body(n0, n1 - n0, true);
    });
    return;
  }
  for (std::int64_t n0 = 0; n0 < batch; n0 += chunk) body(n0, std::min(chunk, batch - n0), false);
}

// A chunk's per-sample step: fn(n) for n in [0, nc), here or as a parallel step.
template <class Fn>
void each_sample(bool serial, std::int64_t nc, Fn&& fn) {
  if (serial) {
    for (std::int64_t n = 0; n < nc; ++n) fn(n);
    return;
  }
  parallel_blocks(nc, 1, [&](std::int64_t, std::int64_t n, std::int64_t) { fn(n); });
}

// A chunk's gemm step: tile(group, r0, r1, c0, c1) over each group's m x n output, whole here or
// as conv_plan.h's tiles in a parallel step.
template <class Tile>
void each_tile(bool serial, std::int64_t groups, std::int64_t m, std::int64_t n, Tile&& tile) {
  if (serial) {
    for (std::int64_t grp = 0; grp < groups; ++grp)
      tile(grp, std::int64_t{0}, m, std::int64_t{0}, n);
    return;
  }
  parallel_tiles(groups, m, n, gemm_tile_grid(m, n), tile);
}

template <class T>
void forward(const ArrayView& xv, const ArrayView& wv, const ArrayView& bv, const ArrayView& yv,
             const Conv2dGeometry& g) {
  const T* x = xv.typed<const T>();
  const T* w = wv.typed<const T>();
  const T* bias = bv.typed<const T>();
  T* y = yv.typed<T>();
  const ConvSizes s(g, sizeof(T), ConvDirection::forward);
  const bool direct = col_is_input(g);
  for_each_chunk(g.batch, s.chunk, s.parallel_chunks,
                 [&](std::int64_t n0, std::int64_t nc, bool serial) {
                   const std::int64_t ld = nc * s.P;
                   // One sample: x is its own col when direct, and y its own output.
                   const bool gather = nc > 1 || !direct;
                   const auto col_buffer = scratch<T>(gather ? s.rows * ld : 0);
                   const auto out_buffer = scratch<T>(nc > 1 ? g.out_channels * ld : 0);
                   const T* col = gather ? col_buffer.get() : x + n0 * s.x_sample;
                   T* out = nc > 1 ? out_buffer.get() : y + n0 * s.y_sample;
                   if (gather) {
                     each_sample(serial, nc, [&](std::int64_t n) {
                       im2col(x + (n0 + n) * s.x_sample, g, col_buffer.get() + n * s.P, ld);
                     });
                   }
                   each_tile(serial, g.groups, s.Kg, ld,
                             [&](std::int64_t grp, std::int64_t r0, std::int64_t r1,
                                 std::int64_t c0, std::int64_t c1) {
                               blas<T>(false, false, r1 - r0, c1 - c0, s.R,
                                       w + (grp * s.Kg + r0) * s.R, s.R, col + grp * s.R * ld + c0,
                                       ld, T(0), out + (grp * s.Kg + r0) * ld + c0, ld);
                             });
                   if (nc == 1 && bias == nullptr) return;
                   each_sample(serial, nc, [&](std::int64_t n) {
                     T* sample = y + (n0 + n) * s.y_sample;
                     for (std::int64_t k = 0; k < g.out_channels; ++k) {
                       const T* from = out + k * ld + n * s.P;
                       T* to = sample + k * s.P;
                       const T b = bias == nullptr ? T(0) : bias[k];
                       for (std::int64_t p = 0; p < s.P; ++p) to[p] = from[p] + b;
                     }
                   });
                 });
}

template <class T>
void backward_data(const ArrayView& dyv, const ArrayView& wv, const ArrayView& dxv,
                   const Conv2dGeometry& g) {
  const T* dy = dyv.typed<const T>();
  const T* w = wv.typed<const T>();
  T* dx = dxv.typed<T>();
  const ConvSizes s(g, sizeof(T), ConvDirection::backward_data);
  if (s.P == 0 || s.Kg == 0) {  // no output: nothing reaches x
    std::fill(dx, dx + g.batch * s.x_sample, T(0));
    return;
  }
  const bool direct = col_is_input(g);
  for_each_chunk(g.batch, s.chunk, s.parallel_chunks,
                 [&](std::int64_t n0, std::int64_t nc, bool serial) {
                   const std::int64_t ld = nc * s.P;
                   // One sample: dy is its own dyc, and when direct, dx its own dcol.
                   const bool scatter = nc > 1 || !direct;
                   const auto dyc_buffer = scratch<T>(nc > 1 ? g.out_channels * ld : 0);
                   const auto dcol_buffer = scratch<T>(scatter ? s.rows * ld : 0);
                   const T* dyc = nc > 1 ? dyc_buffer.get() : dy + n0 * s.y_sample;
                   T* dcol = scatter ? dcol_buffer.get() : dx + n0 * s.x_sample;
                   if (nc > 1) {
                     each_sample(serial, nc, [&](std::int64_t n) {
                       gather_sample(dy + (n0 + n) * s.y_sample, g.out_channels, s.P,
                                     dyc_buffer.get() + n * s.P, ld);
                     });
                   }
                   each_tile(serial, g.groups, s.R, ld,
                             [&](std::int64_t grp, std::int64_t r0, std::int64_t r1,
                                 std::int64_t c0, std::int64_t c1) {
                               blas<T>(true, false, r1 - r0, c1 - c0, s.Kg,
                                       w + grp * s.Kg * s.R + r0, s.R, dyc + grp * s.Kg * ld + c0,
                                       ld, T(0), dcol + (grp * s.R + r0) * ld + c0, ld);
                             });
                   if (!scatter) return;
                   each_sample(serial, nc, [&](std::int64_t n) {
                     T* sample = dx + (n0 + n) * s.x_sample;
                     if (direct) {  // dcol's rows are the sample's channels
                       for (std::int64_t c = 0; c < g.in_channels; ++c)
                         std::copy_n(dcol + c * ld + n * s.P, s.P, sample + c * s.P);
                       return;
                     }
                     std::fill(sample, sample + s.x_sample, T(0));
                     col2im(dcol + n * s.P, ld, g, sample);
                   });
                 });
}

template <class T>
void backward_weight(const ArrayView& xv, const ArrayView& dyv, const ArrayView& dwv,
                     const Conv2dGeometry& g) {
  const T* x = xv.typed<const T>();
  const T* dy = dyv.typed<const T>();
  T* dw = dwv.typed<T>();
  const ConvSizes s(g, sizeof(T), ConvDirection::backward_weight);
  if (g.batch == 0 || s.P == 0) {  // an empty sum
    std::fill(dw, dw + g.out_channels * s.R, T(0));
    return;
  }
  const bool direct = col_is_input(g);
  const auto dyc_buffer = scratch<T>(s.chunk == 1 ? 0 : g.out_channels * s.chunk * s.P);
  const auto col_buffer = scratch<T>(direct && s.chunk == 1 ? 0 : s.rows * s.chunk * s.P);
  const TileGrid grid = gemm_tile_grid(s.Kg, s.R);
  for (std::int64_t n0 = 0; n0 < g.batch; n0 += s.chunk) {
    const std::int64_t nc = std::min(s.chunk, g.batch - n0), ld = nc * s.P;
    const T* dyc = nc == 1 ? dy + n0 * s.y_sample : dyc_buffer.get();
    const T* col = nc == 1 && direct ? x + n0 * s.x_sample : col_buffer.get();
    if (dyc == dyc_buffer.get() || col == col_buffer.get()) {
      parallel_blocks(nc, 1, [&](std::int64_t, std::int64_t n, std::int64_t) {
        if (dyc == dyc_buffer.get()) {
          gather_sample(dy + (n0 + n) * s.y_sample, g.out_channels, s.P, dyc_buffer.get() + n * s.P,
                        ld);
        }
        if (col == col_buffer.get()) {
          im2col(x + (n0 + n) * s.x_sample, g, col_buffer.get() + n * s.P, ld);
        }
      });
    }
    const T beta = n0 == 0 ? T(0) : T(1);
    parallel_tiles(
        g.groups, s.Kg, s.R, grid,
        [&](std::int64_t grp, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
          blas<T>(false, true, r1 - r0, c1 - c0, ld, dyc + (grp * s.Kg + r0) * ld, ld,
                  col + (grp * s.R + c0) * ld, ld, beta, dw + (grp * s.Kg + r0) * s.R + c0, s.R);
        });
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

// Two reductions, as the front end queued them before this kernel existed (the same bits): over
// the spatial axis of the N x C x (H * W) view into an N x C temporary, then over the batch.
void conv2d_backward_bias(const ArrayView& dy, const ArrayView& dbias) {
  const char* op = "conv2d_backward_bias";
  const ConvBiasShape s = conv_bias_shape(op, dy, dbias);
  if (s.channels == 0) return;
  dispatch_floating(dy.dtype, op, [&]<class T>(T) {
    std::vector<T> per_sample(static_cast<std::size_t>(s.batch * s.channels));
    const ArrayView sums = contiguous_view(per_sample.data(), dy.dtype, Shape{s.batch, s.channels});
    reduce_axis(ReduceOp::sum,
                contiguous_view(dy.data, dy.dtype, Shape{s.batch, s.channels, s.spatial}), 2, sums);
    reduce_axis(ReduceOp::sum, sums, 0, dbias);
  });
}

}  // namespace tandem::ops::cpu
