// take and take_backward on a gpu(i) (the take family of kernels.h): the gather is one
// grid-stride kernel over the output; the scatter-add a memset of dx and one kernel of atomic
// adds (float32, float64).
//
// An index out of range is reported as the CPU reports it, without a host round trip per op:
// the kernel stores the index it found in a device slot (every writer stores a bad index, so
// plain stores suffice), which is copied in stream order into pinned host memory; a host item
// after the copy throws the CPU's message, failing the op's event, so the output is poisoned and
// the error surfaces at the next sync point.
#include <memory>
#include <string>

#include "kernel_declarations.h"
#include "launch.cuh"
#include "tandem/accel/accelerator.h"

namespace tandem::ops::cuda {

namespace {

// A bad index found: slot[0] = 1, slot[1] = the index.
template <class T, class I>
__global__ void take_kernel(const T* x, const I* indices, T* out, std::int64_t k,
                            std::int64_t inner, std::int64_t n, std::int64_t x_outer_stride,
                            std::int64_t x_row_stride, std::int64_t x_inner_stride,
                            std::int64_t index_stride, long long* bad, std::int64_t total) {
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    const std::int64_t i = e % inner;
    const std::int64_t j = (e / inner) % k;
    const std::int64_t o = e / (inner * k);
    std::int64_t index = static_cast<std::int64_t>(indices[j * index_stride]);
    if (index < -n || index >= n) {
      bad[0] = 1;
      bad[1] = static_cast<long long>(index);
      continue;
    }
    if (index < 0) index += n;
    out[e] = x[o * x_outer_stride + index * x_row_stride + i * x_inner_stride];
  }
}

template <class T, class I>
__global__ void take_backward_kernel(const T* dy, const I* indices, T* dx, std::int64_t k,
                                     std::int64_t inner, std::int64_t n, std::int64_t index_stride,
                                     std::int64_t total) {
  for (std::int64_t e = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; e < total;
       e += std::int64_t{blockDim.x} * gridDim.x) {
    const std::int64_t i = e % inner;
    const std::int64_t j = (e / inner) % k;
    const std::int64_t o = e / (inner * k);
    std::int64_t index = static_cast<std::int64_t>(indices[j * index_stride]);
    if (index < -n || index >= n) continue;  // the forward reported it
    if (index < 0) index += n;
    atomicAdd(dx + (o * n + index) * inner + i, dy[e]);
  }
}

template <class Fn>
void dispatch_index(DType dtype, Fn&& fn) {
  if (dtype == DType::int32) {
    fn(std::int32_t{});
  } else {
    fn(std::int64_t{});
  }
}

}  // namespace

// out is dense (the front end allocates it); x may have any strides.
void take(const ArrayView& x, const ArrayView& indices, const ArrayView& out, int axis,
          tandem::Stream& stream) {
  const std::int64_t total = out.num_elements();
  if (total == 0) return;
  Launch launch(stream, "take");
  Scratch bad(launch, 2 * sizeof(long long));
  check_cuda(cudaMemsetAsync(bad.data(), 0, 2 * sizeof(long long), launch.stream()),
             "take (cudaMemsetAsync)", launch.device());
  count_kernel_launches();
  const std::int64_t k = out.shape[1], inner = out.shape[2], n = x.shape[1];
  dispatch_storage_dtype(out.dtype, [&]<class T>(T) {
    dispatch_index(indices.dtype, [&]<class I>(I) {
      take_kernel<T, I><<<grid_for(total), kThreads, 0, launch.stream()>>>(
          x.typed<const T>(), indices.typed<const I>(), out.typed<T>(), k, inner, n, x.strides[0],
          x.strides[1], x.strides[2], indices.strides[0], bad.as<long long>(), total);
      launch.launched();
    });
  });
  MemoryPool& pinned = tandem::accelerator(stream.device()).pinned_pool();
  std::shared_ptr<long long> seen(
      static_cast<long long*>(pinned.allocate(2 * sizeof(long long)).data),
      [&pinned](long long* data) {
        pinned.free(MemoryBlock{data, MemoryPool::size_class(2 * sizeof(long long))});
      });
  check_cuda(cudaMemcpyAsync(seen.get(), bad.data(), 2 * sizeof(long long), cudaMemcpyDeviceToHost,
                             launch.stream()),
             "take (cudaMemcpyAsync)", launch.device());
  count_kernel_launches();
  stream.enqueue_host(
      [seen, axis, n] {
        if (seen.get()[0] == 0) return;
        const std::int64_t index = seen.get()[1];
        throw Error("tandem: take: index " + std::to_string(index) + " is out of range for axis " +
                    std::to_string(axis) + " of size " + std::to_string(n) +
                    " (indices must be in [" + std::to_string(-n) + ", " + std::to_string(n) +
                    "))");
      },
      {});
}

// dy and dx are dense; dx is filled with zeros first.
void take_backward(const ArrayView& dy, const ArrayView& indices, const ArrayView& dx, int axis,
                   tandem::Stream& stream) {
  (void)axis;
  const std::int64_t size = dx.num_elements();
  if (size == 0) return;
  Launch launch(stream, "take_backward");
  check_cuda(cudaMemsetAsync(dx.data, 0, static_cast<std::size_t>(size) * dtype_size(dx.dtype),
                             launch.stream()),
             "take_backward (cudaMemsetAsync)", launch.device());
  count_kernel_launches();
  const std::int64_t total = dy.num_elements();
  if (total == 0) return;
  const std::int64_t k = dy.shape[1], inner = dy.shape[2], n = dx.shape[1];
  const auto run = [&]<class T>(T) {
    dispatch_index(indices.dtype, [&]<class I>(I) {
      take_backward_kernel<T, I><<<grid_for(total), kThreads, 0, launch.stream()>>>(
          dy.typed<const T>(), indices.typed<const I>(), dx.typed<T>(), k, inner, n,
          indices.strides[0], total);
      launch.launched();
    });
  };
  if (dx.dtype == DType::float64) {
    run(double{});
  } else if (dx.dtype == DType::float32) {
    run(float{});
  } else {
    throw Error(std::string("tandem: take_backward: needs a floating gradient, got ") +
                dtype_name(dx.dtype));
  }
}

}  // namespace tandem::ops::cuda
