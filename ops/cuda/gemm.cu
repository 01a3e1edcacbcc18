// gemm on a gpu(i). cuBLAS is column-major; a row-major m x n matrix with row stride ld is, read
// column-major, its n x m transpose with the same ld. So row-major c = a · b is computed as the
// column-major product c^T = b^T · a^T: cuBLAS gets (b, a) in that order, with m and n swapped,
// and each operand's transpose flag as its layout requires.
#include <cublas_v2.h>

#include <algorithm>

#include "common/blas_operand.h"
#include "common/gemm_checks.h"
#include "launch.cuh"
#include "tandem/ops/cuda/copy.h"
#include "tandem/ops/cuda/gemm.h"
#include "tandem/ops/functors.h"

namespace tandem::ops::cuda {

namespace {

template <class T>
void blas_gemm(cublasHandle_t handle, const Launch& launch, const ArrayView& a, BlasOperand da,
               const ArrayView& b, BlasOperand db, const ArrayView& c, bool accumulate) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  const std::int64_t ldc = output_leading(c);
  // Column-major: first operand b^T (n x k): as stored unless b is column-major itself.
  const cublasOperation_t op_b = db.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = da.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Host pointers: the handle's default CUBLAS_POINTER_MODE_HOST.
  const T one = 1, beta = accumulate ? 1 : 0;
  launch.library_call();
  if constexpr (std::is_same_v<T, float>) {
    check_cublas(
        cublasSgemm_64(handle, op_b, op_a, n, m, k, &one, b.typed<const float>(), db.leading,
                       a.typed<const float>(), da.leading, &beta, c.typed<float>(), ldc),
        "gemm: cublasSgemm_64", launch.device());
  } else {
    check_cublas(
        cublasDgemm_64(handle, op_b, op_a, n, m, k, &one, b.typed<const double>(), db.leading,
                       a.typed<const double>(), da.leading, &beta, c.typed<double>(), ldc),
        "gemm: cublasDgemm_64", launch.device());
  }
}

template <class T>
void floating_gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c,
                   tandem::Stream& stream, bool accumulate) {
  if (c.shape[1] != 1 && c.strides[1] != 1) {
    throw Error("tandem: gemm: the output must have unit stride along its rows");
  }
  cublasHandle_t handle = tandem::detail::cublas_handle(stream);
  Launch launch(stream, "gemm");
  // Operands cuBLAS cannot describe are packed into one dense scratch block first.
  BlasOperand da = describe_for_blas(a), db = describe_for_blas(b);
  const std::size_t a_bytes =
      da.usable ? 0 : static_cast<std::size_t>(a.num_elements()) * sizeof(T);
  const std::size_t b_bytes =
      db.usable ? 0 : static_cast<std::size_t>(b.num_elements()) * sizeof(T);
  const std::size_t b_offset = (a_bytes + 255) / 256 * 256;
  Scratch scratch(launch, b_offset + b_bytes);
  ArrayView pa = a, pb = b;
  if (!da.usable) {
    pa = contiguous_view(scratch.as<T>(), a.dtype, a.shape);
    copy(a, pa, stream);
    da = describe_for_blas(pa);
  }
  if (!db.usable) {
    pb = contiguous_view(scratch.as<T>(b_offset), b.dtype, b.shape);
    copy(b, pb, stream);
    db = describe_for_blas(pb);
  }
  blas_gemm<T>(handle, launch, pa, da, pb, db, c, accumulate);
}

// One thread per element of c, adding over k in order with wrapping arithmetic: the CPU's
// integer results exactly.
template <class T>
__global__ void integer_gemm_kernel(const T* a, std::int64_t sa0, std::int64_t sa1, const T* b,
                                    std::int64_t sb0, std::int64_t sb1, T* c, std::int64_t sc0,
                                    std::int64_t sc1, std::int64_t m, std::int64_t n,
                                    std::int64_t k, bool accumulate) {
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < m * n;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    const std::int64_t i = e / n, j = e % n;
    T sum = accumulate ? c[i * sc0 + j * sc1] : T(0);
    for (std::int64_t p = 0; p < k; ++p) {
      sum = functors::wrapping_add(
          sum, functors::wrapping_mul(a[i * sa0 + p * sa1], b[p * sb0 + j * sb1]));
    }
    c[i * sc0 + j * sc1] = sum;
  }
}

template <class T>
void integer_gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c,
                  tandem::Stream& stream, bool accumulate) {
  const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  Launch launch(stream, "gemm");
  integer_gemm_kernel<T><<<grid_for(m * n), kThreads, 0, launch.stream()>>>(
      a.typed<const T>(), a.strides[0], a.strides[1], b.typed<const T>(), b.strides[0],
      b.strides[1], c.typed<T>(), c.strides[0], c.strides[1], m, n, k, accumulate);
  launch.launched();
}

}  // namespace

void gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c, tandem::Stream& stream,
          bool accumulate) {
  check_gemm_shapes(a, b, c);
  if (c.num_elements() == 0) return;
  if (a.shape[1] == 0) {
    if (!accumulate) fill(c, 0.0, stream);  // an empty sum adds nothing
    return;
  }
  dispatch_dtype(c.dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T>) {
      floating_gemm<T>(a, b, c, stream, accumulate);
    } else {
      integer_gemm<T>(a, b, c, stream, accumulate);
    }
  });
}

}  // namespace tandem::ops::cuda
