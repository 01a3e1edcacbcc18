// Element-wise kernels on a gpu(i): the functors of tandem/ops/functors.h (the CPU's own) in a
// grid-stride loop, a dense fast path when every operand is one gap-free run, a row-by-row path
// for binary ops on two-dimensional layouts (a broadcast row or column), else strided
// addressing through StridedIndexer (stride 0 for broadcast dimensions).
//
// The dense path moves 16 bytes per load and store (a float4's worth: 4 floats, 2 doubles, 16
// bytes) when every operand starts on a 16-byte boundary, as the device pool's blocks do, with
// the last n % N elements done one by one; this is what lets a memory-bound kernel reach the
// device's bandwidth (as PyTorch's vectorised element-wise kernels do). The grid is sized to
// the device (launch.cuh, grid_for).
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>

#include "common/functor_dispatch.h"  // op tag -> functor, shared with the CPU kernels
#include "launch.cuh"
#include "tandem/accel/accelerator.h"
#include "tandem/ops/convert.h"
#include "tandem/ops/cuda/elementwise.h"

namespace tandem::ops::cuda {

namespace {

// N elements of T moved as one aligned load or store.
template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Elements per 16-byte pack.
template <class T>
constexpr int kPack = sizeof(T) <= 16 ? static_cast<int>(16 / sizeof(T)) : 1;

inline bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// n elements as n / N packs, then the tail one by one (N = 1: no packs, a plain loop).
template <class T, int N, class F>
__global__ void unary_dense_kernel(F f, const T* in, T* out, std::int64_t n) {
  const std::int64_t packs = N > 1 ? n / N : 0;
  const std::int64_t first = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  if constexpr (N > 1) {
    const auto* pin = reinterpret_cast<const Pack<T, N>*>(in);
    auto* pout = reinterpret_cast<Pack<T, N>*>(out);
    for (std::int64_t i = first; i < packs; i += step) {
      const Pack<T, N> x = pin[i];
      Pack<T, N> y;
#pragma unroll
      for (int k = 0; k < N; ++k) y.v[k] = f(x.v[k]);
      pout[i] = y;
    }
  }
  for (std::int64_t i = packs * N + first; i < n; i += step) out[i] = f(in[i]);
}

template <class T, class F>
__global__ void unary_strided_kernel(F f, const T* in, T* out, StridedIndexer<2> indexer,
                                     std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    std::int64_t off[2];
    indexer.offsets(i, off);
    out[off[1]] = f(in[off[0]]);
  }
}

template <class T, int N, class F>
__global__ void binary_dense_kernel(F f, const T* a, const T* b, T* out, std::int64_t n) {
  const std::int64_t packs = N > 1 ? n / N : 0;
  const std::int64_t first = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  if constexpr (N > 1) {
    const auto* pa = reinterpret_cast<const Pack<T, N>*>(a);
    const auto* pb = reinterpret_cast<const Pack<T, N>*>(b);
    auto* pout = reinterpret_cast<Pack<T, N>*>(out);
    for (std::int64_t i = first; i < packs; i += step) {
      const Pack<T, N> x = pa[i], y = pb[i];
      Pack<T, N> z;
#pragma unroll
      for (int k = 0; k < N; ++k) z.v[k] = f(x.v[k], y.v[k]);
      pout[i] = z;
    }
  }
  for (std::int64_t i = packs * N + first; i < n; i += step) out[i] = f(a[i], b[i]);
}

// op(a, scalar) or op(scalar, a) over one gap-free run, packed like the kernels above.
template <class T, int N, class F, bool kScalarFirst>
__global__ void binary_scalar_dense_kernel(F f, const T* a, T scalar, T* out, std::int64_t n) {
  const std::int64_t packs = N > 1 ? n / N : 0;
  const std::int64_t first = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  const std::int64_t step = std::int64_t{blockDim.x} * gridDim.x;
  const auto apply = [&](T x) { return kScalarFirst ? f(scalar, x) : f(x, scalar); };
  if constexpr (N > 1) {
    const auto* pa = reinterpret_cast<const Pack<T, N>*>(a);
    auto* pout = reinterpret_cast<Pack<T, N>*>(out);
    for (std::int64_t i = first; i < packs; i += step) {
      const Pack<T, N> x = pa[i];
      Pack<T, N> z;
#pragma unroll
      for (int k = 0; k < N; ++k) z.v[k] = apply(x.v[k]);
      pout[i] = z;
    }
  }
  for (std::int64_t i = packs * N + first; i < n; i += step) out[i] = apply(a[i]);
}

// Launches `kernel<N>` for N = the pack size when every pointer is 16-byte aligned, else N = 1,
// with enough threads for the packs (grid_for).
template <class T, class Launcher>
void launch_dense(std::int64_t n, std::initializer_list<const void*> pointers,
                  Launcher&& launcher) {
  constexpr int N = kPack<T>;
  bool aligned = N > 1;
  for (const void* p : pointers) aligned = aligned && aligned16(p);
  if (aligned) {
    launcher(std::integral_constant<int, N>{}, grid_for((n + N - 1) / N));
  } else {
    launcher(std::integral_constant<int, 1>{}, grid_for(n));
  }
}

template <class T, class F>
__global__ void binary_strided_kernel(F f, const T* a, const T* b, T* out,
                                      StridedIndexer<3> indexer, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    std::int64_t off[3];
    indexer.offsets(i, off);
    out[off[2]] = f(a[off[0]], b[off[1]]);
  }
}

// A layout of two dimensions (rows x cols after make_layout merged what it could: a matrix plus
// a broadcast row or column, a transposed or sliced operand): blockIdx.y walks the rows and a
// row of threads the columns, so no flat index is divided into coordinates (a 64-bit division
// per element can make the strided kernel compute-bound on a broadcast add: an estimate from
// instruction counts, not measured on a GPU).
template <class T, class F>
__global__ void binary_2d_kernel(F f, const T* a, const T* b, T* out, StridedIndexer<3> indexer) {
  const std::int64_t rows = indexer.shape[0], cols = indexer.shape[1];
  const auto& s = indexer.strides;
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const T* ar = a + r * s[0][0];
    const T* br = b + r * s[1][0];
    T* outr = out + r * s[2][0];
    for (std::int64_t c = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; c < cols;
         c += std::int64_t{blockDim.x} * gridDim.x) {
      outr[c * s[2][1]] = f(ar[c * s[0][1]], br[c * s[1][1]]);
    }
  }
}

// Rows at least this long take binary_2d_kernel (a warp's worth of columns, so that no more than
// a few threads of a block idle at a row's end).
constexpr std::int64_t kMin2dColumns = 32;

// The grid of binary_2d_kernel: blocks enough for a row's columns across, then as many rows of
// blocks as fill the device (max_grid_blocks() in all), at most 65535 (the grid's y limit).
dim3 grid_2d(std::int64_t rows, std::int64_t cols) {
  const std::int64_t across = (cols + kThreads - 1) / kThreads;
  const std::int64_t x = std::min<std::int64_t>(across, max_grid_blocks());
  const std::int64_t y =
      std::clamp<std::int64_t>(max_grid_blocks() / x, 1, std::min<std::int64_t>(rows, 65535));
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

// Integer division by a zero element, reported as the CPU reports it (ops/src/cpu/elementwise.cc)
// without a device-to-host round trip per op: the kernel runs its functor through
// FlagZeroDivisor, which raises a flag in device memory when a divisor is 0 (every writer stores
// the same 1, so plain stores suffice). ZeroDivisorCheck copies the flag, in stream order, into
// pinned host memory, and a host item after the copy throws the CPU's error text: it fails the
// op's event like any kernel error, so the output is poisoned and the error surfaces at the
// next sync point. The quotient the functor gives for a zero divisor (0) is never observable.
template <class F>
struct FlagZeroDivisor {
  F f;
  unsigned* flag;
  template <class T>
  __device__ T operator()(T a, T b) const {
    if (b == T(0)) *flag = 1;
    return f(a, b);
  }
};

class ZeroDivisorCheck {
 public:
  // `divisor` names the operand checked, for the message.
  ZeroDivisorCheck(const Launch& launch, tandem::Stream& stream, const ArrayView& divisor)
      : launch_(launch),
        stream_(stream),
        flag_(launch, sizeof(unsigned)),
        message_(std::string("tandem: divide: integer division by zero (") +
                 dtype_name(divisor.dtype) + " divisor of shape " + divisor.shape.to_string() +
                 " holds a 0)") {
    check_cuda(cudaMemsetAsync(flag_.data(), 0, sizeof(unsigned), launch.stream()),
               "divide (cudaMemsetAsync)", launch.device());
    count_kernel_launches();
  }
  ZeroDivisorCheck(const ZeroDivisorCheck&) = delete;
  ZeroDivisorCheck& operator=(const ZeroDivisorCheck&) = delete;

  template <class F>
  FlagZeroDivisor<F> wrap(F f) const {
    return FlagZeroDivisor<F>{f, flag_.as<unsigned>()};
  }

  // After the kernel: the copy of the flag and the host item that reports it. The pinned block
  // goes back to its pool when the item is destroyed, also when the stream skips it.
  void report() {
    MemoryPool& pinned = tandem::accelerator(stream_.device()).pinned_pool();
    std::shared_ptr<unsigned> seen(
        static_cast<unsigned*>(pinned.allocate(sizeof(unsigned)).data), [&pinned](unsigned* data) {
          pinned.free(MemoryBlock{data, MemoryPool::size_class(sizeof(unsigned))});
        });
    check_cuda(cudaMemcpyAsync(seen.get(), flag_.data(), sizeof(unsigned), cudaMemcpyDeviceToHost,
                               launch_.stream()),
               "divide (cudaMemcpyAsync)", launch_.device());
    count_kernel_launches();
    stream_.enqueue_host(
        [seen, message = message_] {
          if (*seen != 0) throw Error(message);
        },
        {});
  }

 private:
  const Launch& launch_;
  tandem::Stream& stream_;
  Scratch flag_;  // freed in stream order, after the copy that reads it
  std::string message_;
};

// op(a, scalar) or op(scalar, a): the scalar travels by value, not through device memory.
template <class T, class F, bool kScalarFirst>
__global__ void binary_scalar_kernel(F f, const T* a, T scalar, T* out, StridedIndexer<2> indexer,
                                     std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    std::int64_t off[2];
    indexer.offsets(i, off);
    out[off[1]] = kScalarFirst ? f(scalar, a[off[0]]) : f(a[off[0]], scalar);
  }
}

}  // namespace

void unary(UnaryOp op, const ArrayView& in, const ArrayView& out, tandem::Stream& stream) {
  const std::int64_t n = out.num_elements();
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    dispatch_unary(op, [&]<class F>(F f) {
      if constexpr (functor_defined_for<T, F>()) {
        if (n == 0) return;
        Launch launch(stream, op_name(op));
        const auto indexer = make_indexer<2>(out.shape, {&in.strides, &out.strides});
        if (indexer.dense()) {
          launch_dense<T>(n, {in.data, out.data},
                          [&]<int N>(std::integral_constant<int, N>, unsigned grid) {
                            unary_dense_kernel<T, N><<<grid, kThreads, 0, launch.stream()>>>(
                                f, in.typed<const T>(), out.typed<T>(), n);
                          });
        } else {
          unary_strided_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
              f, in.typed<const T>(), out.typed<T>(), indexer, n);
        }
        launch.launched();
      } else {
        unsupported_dtype(op_name(op), out.dtype);
      }
    });
  });
}

void binary(BinaryOp op, const ArrayView& a, const ArrayView& b, const ArrayView& out,
            tandem::Stream& stream) {
  const std::int64_t n = out.num_elements();
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    dispatch_binary(op, [&]<class F>(F f) {
      if constexpr (functor_defined_for<T, F>()) {
        if (n == 0) return;
        Launch launch(stream, op_name(op));
        const auto indexer = make_indexer<3>(out.shape, {&a.strides, &b.strides, &out.strides});
        const auto run = [&](auto functor) {
          if (indexer.dense()) {
            launch_dense<T>(n, {a.data, b.data, out.data},
                            [&]<int N>(std::integral_constant<int, N>, unsigned grid) {
                              binary_dense_kernel<T, N><<<grid, kThreads, 0, launch.stream()>>>(
                                  functor, a.typed<const T>(), b.typed<const T>(), out.typed<T>(),
                                  n);
                            });
          } else if (indexer.ndim == 2 && indexer.shape[1] >= kMin2dColumns) {
            binary_2d_kernel<T>
                <<<grid_2d(indexer.shape[0], indexer.shape[1]), kThreads, 0, launch.stream()>>>(
                    functor, a.typed<const T>(), b.typed<const T>(), out.typed<T>(), indexer);
          } else {
            binary_strided_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
                functor, a.typed<const T>(), b.typed<const T>(), out.typed<T>(), indexer, n);
          }
          launch.launched();
        };
        if constexpr (std::is_integral_v<T> && std::is_same_v<F, functors::Divide>) {
          ZeroDivisorCheck zero(launch, stream, b);
          run(zero.wrap(f));
          zero.report();
        } else {
          run(f);
        }
      } else {
        unsupported_dtype(op_name(op), out.dtype);
      }
    });
  });
}

void binary_scalar(BinaryOp op, const ArrayView& a, double scalar, bool scalar_first,
                   const ArrayView& out, tandem::Stream& stream) {
  const std::int64_t n = out.num_elements();
  dispatch_dtype(out.dtype, [&]<class T>(T) {
    dispatch_binary(op, [&]<class F>(F f) {
      if constexpr (functor_defined_for<T, F>()) {
        if (n == 0) return;
        Launch launch(stream, op_name(op));
        const T value = convert<T>(scalar);
        if constexpr (std::is_integral_v<T>) {
          // A scalar divisor is known on the host: the CPU's error, at no cost.
          if (op == BinaryOp::divide && !scalar_first && value == T(0)) {
            throw Error(std::string("tandem: divide: integer division by zero (") +
                        dtype_name(out.dtype) + " divisor of shape " + out.shape.to_string() +
                        " holds a 0)");
          }
        }
        const auto indexer = make_indexer<2>(out.shape, {&a.strides, &out.strides});
        const auto run_ordered = [&]<bool kScalarFirst, class G>(G functor) {
          if (indexer.dense()) {
            launch_dense<T>(n, {a.data, out.data},
                            [&]<int N>(std::integral_constant<int, N>, unsigned grid) {
                              binary_scalar_dense_kernel<T, N, G, kScalarFirst>
                                  <<<grid, kThreads, 0, launch.stream()>>>(
                                      functor, a.typed<const T>(), value, out.typed<T>(), n);
                            });
          } else {
            binary_scalar_kernel<T, G, kScalarFirst><<<grid_for(n), kThreads, 0, launch.stream()>>>(
                functor, a.typed<const T>(), value, out.typed<T>(), indexer, n);
          }
          launch.launched();
        };
        if (!scalar_first) {
          run_ordered.template operator()<false>(f);
          return;
        }
        // scalar / a: the divisors are a's elements, known only on the device.
        const auto run = [&]<class G>(G functor) {
          run_ordered.template operator()<true>(functor);
        };
        if constexpr (std::is_integral_v<T> && std::is_same_v<F, functors::Divide>) {
          ZeroDivisorCheck zero(launch, stream, a);
          run(zero.wrap(f));
          zero.report();
        } else {
          run(f);
        }
      } else {
        unsupported_dtype(op_name(op), out.dtype);
      }
    });
  });
}

void unary_dense(UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n,
                 tandem::Stream& stream) {
  const Shape shape{n};
  unary(op, contiguous_view(const_cast<void*>(in), dtype, shape),
        contiguous_view(out, dtype, shape), stream);
}

void binary_dense(BinaryOp op, DType dtype, const void* a, const void* b, void* out, std::int64_t n,
                  tandem::Stream& stream) {
  const Shape shape{n};
  binary(op, contiguous_view(const_cast<void*>(a), dtype, shape),
         contiguous_view(const_cast<void*>(b), dtype, shape), contiguous_view(out, dtype, shape),
         stream);
}

void binary_scalar_dense(BinaryOp op, DType dtype, const void* a, double scalar, bool scalar_first,
                         void* out, std::int64_t n, tandem::Stream& stream) {
  const Shape shape{n};
  binary_scalar(op, contiguous_view(const_cast<void*>(a), dtype, shape), scalar, scalar_first,
                contiguous_view(out, dtype, shape), stream);
}

}  // namespace tandem::ops::cuda
