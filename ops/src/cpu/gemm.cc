// CPU gemm: CBLAS for floating types, split into row blocks run in the engine's TBB arena.
#include "tandem/ops/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/blas_operand.h"
#include "common/gemm_checks.h"
#include "parallel.h"
#include "tandem/errors.h"
#include "tandem/ops/cpu/copy.h"
#include "tandem/ops/functors.h"

namespace tandem::ops::cpu {

namespace {

// Row blocks: at least ~64 rows and ~32 MFLOP each (smaller blocks cost more in repeated
// packing of b than they gain), at most one per hardware thread.
std::int64_t rows_per_block(std::int64_t m, std::int64_t n, std::int64_t k) {
  static const std::int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  const std::int64_t flops_per_row = std::max<std::int64_t>(1, 2 * n * k);
  const std::int64_t min_rows =
      std::max<std::int64_t>(64, (std::int64_t{32} << 20) / flops_per_row);
  const std::int64_t blocks = std::clamp<std::int64_t>(m / min_rows, 1, threads);
  return (m + blocks - 1) / blocks;
}

template <class T>
void blas_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
               std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc,
               bool accumulate) {
  const auto op_a = ta ? CblasTrans : CblasNoTrans;
  const auto op_b = tb ? CblasTrans : CblasNoTrans;
  const auto i = [](std::int64_t v) { return static_cast<blasint>(v); };
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, op_a, op_b, i(m), i(n), i(k), 1.0f, a, i(lda), b, i(ldb),
                accumulate ? 1.0f : 0.0f, c, i(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, op_a, op_b, i(m), i(n), i(k), 1.0, a, i(lda), b, i(ldb),
                accumulate ? 1.0 : 0.0, c, i(ldc));
  }
}

// Replaces `v` by a dense copy held in the returned buffer, when BLAS cannot take its layout.
template <class T>
std::vector<T> pack(ArrayView& v) {
  std::vector<T> buffer(static_cast<std::size_t>(v.num_elements()));
  const ArrayView dense = contiguous_view(buffer.data(), v.dtype, v.shape);
  copy(v, dense);
  v = dense;
  return buffer;
}

template <class T>
void floating_gemm(ArrayView a, ArrayView b, const ArrayView& c, bool accumulate) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  std::vector<T> a_buffer, b_buffer;
  BlasOperand da = describe_for_blas(a), db = describe_for_blas(b);
  if (!da.usable) {
    a_buffer = pack<T>(a);
    da = describe_for_blas(a);
  }
  if (!db.usable) {
    b_buffer = pack<T>(b);
    db = describe_for_blas(b);
  }
  configure_blas_threads();
  const T* pa = a.typed<const T>();
  const T* pb = b.typed<const T>();
  T* pc = c.typed<T>();
  const std::int64_t ldc = output_leading(c);
  // Row r of a starts at r * (its row stride), transposed or not.
  const std::int64_t a_row = da.transposed ? 1 : da.leading;
  parallel_blocks(m, rows_per_block(m, n, k), [&](std::int64_t, std::int64_t r0, std::int64_t r1) {
    blas_gemm<T>(da.transposed, db.transposed, r1 - r0, n, k, pa + r0 * a_row, da.leading, pb,
                 db.leading, pc + r0 * ldc, ldc, accumulate);
  });
}

template <class T>
void integer_gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c, bool accumulate) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  const T* pa = a.typed<const T>();
  const T* pb = b.typed<const T>();
  T* pc = c.typed<T>();
  const auto& sa = a.strides;
  const auto& sb = b.strides;
  const auto& sc = c.strides;
  parallel_blocks(m, std::max<std::int64_t>(1, (64 * 1024) / std::max<std::int64_t>(1, n * k)),
                  [&](std::int64_t, std::int64_t r0, std::int64_t r1) {
                    for (std::int64_t i = r0; i < r1; ++i) {
                      T* row = pc + i * sc[0];
                      if (!accumulate) {
                        for (std::int64_t j = 0; j < n; ++j) row[j * sc[1]] = T(0);
                      }
                      for (std::int64_t p = 0; p < k; ++p) {
                        const T av = pa[i * sa[0] + p * sa[1]];
                        for (std::int64_t j = 0; j < n; ++j) {
                          row[j * sc[1]] = functors::wrapping_add(
                              row[j * sc[1]],
                              functors::wrapping_mul(av, pb[p * sb[0] + j * sb[1]]));
                        }
                      }
                    }
                  });
}

}  // namespace

void configure_blas_threads() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c, bool accumulate) {
  check_gemm_shapes(a, b, c);
  if (c.num_elements() == 0) return;
  if (a.shape[1] == 0) {
    if (!accumulate) fill(c, 0.0);  // an empty sum adds nothing
    return;
  }
  dispatch_dtype(c.dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T>) {
      if (c.shape[1] != 1 && c.strides[1] != 1) {
        throw Error("tandem: gemm: the output must have unit stride along its rows");
      }
      floating_gemm<T>(a, b, c, accumulate);
    } else {
      integer_gemm<T>(a, b, c, accumulate);
    }
  });
}

}  // namespace tandem::ops::cpu
