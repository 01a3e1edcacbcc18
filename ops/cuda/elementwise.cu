// Element-wise kernels on a gpu(i): the functors of tandem/ops/functors.h (the CPU's own) in a
// grid-stride loop, a dense fast path when every operand is one gap-free run, else strided
// addressing through StridedIndexer (stride 0 for broadcast dimensions).
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

template <class T, class F>
__global__ void unary_dense_kernel(F f, const T* in, T* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    out[i] = f(in[i]);
  }
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

template <class T, class F>
__global__ void binary_dense_kernel(F f, const T* a, const T* b, T* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{blockDim.x} * gridDim.x) {
    out[i] = f(a[i], b[i]);
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
          unary_dense_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
              f, in.typed<const T>(), out.typed<T>(), n);
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
            binary_dense_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
                functor, a.typed<const T>(), b.typed<const T>(), out.typed<T>(), n);
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
        if (!scalar_first) {
          binary_scalar_kernel<T, F, false><<<grid_for(n), kThreads, 0, launch.stream()>>>(
              f, a.typed<const T>(), value, out.typed<T>(), indexer, n);
          launch.launched();
          return;
        }
        // scalar / a: the divisors are a's elements, known only on the device.
        const auto run = [&]<class G>(G functor) {
          binary_scalar_kernel<T, G, true><<<grid_for(n), kThreads, 0, launch.stream()>>>(
              functor, a.typed<const T>(), value, out.typed<T>(), indexer, n);
          launch.launched();
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
