// take and take_backward on the CPU (the take family of kernels.h): a gather of rows of
// `inner` elements along the middle axis of (outer, n, inner) views, and its scatter-add.
#include <string>

#include "kernel_declarations.h"
#include "parallel.h"
#include "tandem/errors.h"

namespace tandem::ops::cpu {

namespace {

// The index of `indices` at j, as an int64 (int32 or int64 storage, any stride).
std::int64_t index_at(const ArrayView& indices, std::int64_t j) {
  const std::int64_t offset = j * indices.strides[0];
  if (indices.dtype == DType::int32) return indices.typed<const std::int32_t>()[offset];
  return indices.typed<const std::int64_t>()[offset];
}

[[noreturn]] void throw_out_of_range(std::int64_t index, int axis, std::int64_t n) {
  throw Error("tandem: take: index " + std::to_string(index) + " is out of range for axis " +
              std::to_string(axis) + " of size " + std::to_string(n) + " (indices must be in [" +
              std::to_string(-n) + ", " + std::to_string(n) + "))");
}

}  // namespace

void take(const ArrayView& x, const ArrayView& indices, const ArrayView& out, int axis) {
  const std::int64_t outer = out.shape[0], k = out.shape[1], inner = out.shape[2];
  const std::int64_t n = x.shape[1];
  // Every index is checked before anything is written: a bad one fails the op as a whole.
  for (std::int64_t j = 0; j < k; ++j) {
    const std::int64_t index = index_at(indices, j);
    if (index < -n || index >= n) throw_out_of_range(index, axis, n);
  }
  dispatch_storage_dtype(out.dtype, [&]<class T>(T) {
    const T* src = x.typed<const T>();
    T* dst = out.typed<T>();
    const std::int64_t rows = outer * k;
    const std::int64_t block =
        std::max<std::int64_t>(1, kElementwiseBlock / std::max<std::int64_t>(1, inner));
    parallel_blocks(rows, block, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        const std::int64_t o = row / k, j = row % k;
        std::int64_t index = index_at(indices, j);
        if (index < 0) index += n;
        const T* s = src + o * x.strides[0] + index * x.strides[1];
        T* d = dst + o * out.strides[0] + j * out.strides[1];
        for (std::int64_t i = 0; i < inner; ++i) d[i * out.strides[2]] = s[i * x.strides[2]];
      }
    });
  });
}

void take_backward(const ArrayView& dy, const ArrayView& indices, const ArrayView& dx, int axis) {
  (void)axis;  // the forward checked the indices; one out of range adds nothing here
  const std::int64_t outer = dy.shape[0], k = dy.shape[1], inner = dy.shape[2];
  const std::int64_t n = dx.shape[1];
  dispatch_dtype(dx.dtype, [&]<class T>(T) {
    const T* src = dy.typed<const T>();
    T* dst = dx.typed<T>();
    // One task per (outer, inner) column: a repeated index adds into the same element from one
    // thread only, in index order, so the sums repeat exactly from run to run.
    parallel_blocks(outer, 1, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      for (std::int64_t o = begin; o < end; ++o) {
        T* d = dst + o * dx.strides[0];
        for (std::int64_t r = 0; r < n; ++r)
          for (std::int64_t i = 0; i < inner; ++i) d[r * dx.strides[1] + i * dx.strides[2]] = T(0);
        const T* s = src + o * dy.strides[0];
        for (std::int64_t j = 0; j < k; ++j) {
          std::int64_t index = index_at(indices, j);
          if (index < -n || index >= n) continue;
          if (index < 0) index += n;
          for (std::int64_t i = 0; i < inner; ++i)
            d[index * dx.strides[1] + i * dx.strides[2]] +=
                s[j * dy.strides[1] + i * dy.strides[2]];
        }
      }
    });
  });
}

}  // namespace tandem::ops::cpu
