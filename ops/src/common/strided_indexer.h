// StridedIndexer: N operands of one shape, each with its own strides, walked by a flat row-major
// index; `offsets(i, off)` gives each operand's element offset of the i-th element. The CUDA
// kernels' addressing for views that are not one gap-free run (ops/cuda/launch.cuh).
//
// Turning a flat index into coordinates takes a division per dimension. A 64-bit division is a
// software routine of dozens of instructions on a GPU, by instruction count enough to make a
// memory-bound kernel compute-bound (not measured on a GPU); when every flat index fits in 31 bits
// (arrays of up to 2^31 - 1 elements: all but the largest) each division is a FastDivider's
// multiply-high, add and shift instead, with the divisor's constants computed once on the host.
// Plain C++ as well, so the host tests check it (tests/ops/strided_indexer_test.cc).
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "common/strided_loop.h"  // make_layout: the dimension merging the CPU kernels use
#include "tandem/ops/host_device.h"

namespace tandem::ops {

// n / divisor for n < 2^31 and a divisor of 1 to 2^31 - 1, as (umulhi(n, m) + n) >> s with
// s = ceil(log2(divisor)) and m = floor(2^32 * (2^s - divisor) / divisor) + 1 (Granlund and
// Montgomery, "Division by invariant integers using multiplication", PLDI 1994, section 4).
// n + umulhi(n, m) <= 2n < 2^32, so the sum does not overflow.
class FastDivider {
 public:
  FastDivider() = default;
  explicit FastDivider(std::uint32_t divisor) {
    while (shift_ < 31 && (std::uint32_t{1} << shift_) < divisor) ++shift_;
    const std::uint64_t one = 1;
    multiplier_ =
        static_cast<std::uint32_t>(((one << 32) * ((one << shift_) - divisor)) / divisor + 1);
  }

  TANDEM_HOST_DEVICE std::uint32_t divide(std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t high = __umulhi(n, multiplier_);
#else
    const auto high =
        static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * multiplier_) >> 32);
#endif
    return (high + n) >> shift_;
  }

 private:
  std::uint32_t multiplier_ = 1;
  std::uint32_t shift_ = 0;
};

template <int N>
struct StridedIndexer {
  int ndim = 1;
  // Every flat index fits in 31 bits: offsets() divides with `divider`, not in 64 bits.
  bool small = false;
  std::int64_t shape[kMaxDims] = {};
  std::int64_t strides[N][kMaxDims] = {};
  FastDivider divider[kMaxDims] = {};  // divider[d] divides by shape[d]

  TANDEM_HOST_DEVICE void offsets(std::int64_t linear, std::int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    if (small) {
      auto index = static_cast<std::uint32_t>(linear);
      for (int d = ndim - 1; d > 0; --d) {
        const std::uint32_t quotient = divider[d].divide(index);
        const auto coordinate =
            static_cast<std::int64_t>(index - quotient * static_cast<std::uint32_t>(shape[d]));
        index = quotient;
        for (int k = 0; k < N; ++k) off[k] += coordinate * strides[k][d];
      }
      for (int k = 0; k < N; ++k) off[k] += static_cast<std::int64_t>(index) * strides[k][0];
      return;
    }
    for (int d = ndim - 1; d > 0; --d) {
      const std::int64_t index = linear % shape[d];
      linear /= shape[d];
      for (int k = 0; k < N; ++k) off[k] += index * strides[k][d];
    }
    for (int k = 0; k < N; ++k) off[k] += linear * strides[k][0];  // outermost: no division
  }
  // Every operand is one gap-free run: the kernels' fast path.
  bool dense() const {
    if (ndim != 1) return false;
    for (int k = 0; k < N; ++k) {
      if (strides[k][0] != 1) return false;
    }
    return true;
  }
};

template <int N>
StridedIndexer<N> make_indexer(const Shape& shape, const std::array<const Strides*, N>& strides) {
  const auto layout = make_layout<N>(shape, strides);
  StridedIndexer<N> indexer;
  indexer.ndim = layout.ndim;
  std::int64_t elements = 1;
  for (int d = 0; d < layout.ndim; ++d) {
    indexer.shape[d] = layout.shape[static_cast<std::size_t>(d)];
    elements *= indexer.shape[d];
    for (int k = 0; k < N; ++k) {
      indexer.strides[k][d] =
          layout.strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
    }
  }
  // An empty array has nothing to index (and a divisor of 0 has no FastDivider).
  indexer.small = elements > 0 && elements <= std::numeric_limits<std::int32_t>::max();
  if (indexer.small) {
    for (int d = 1; d < layout.ndim; ++d) {
      indexer.divider[d] = FastDivider(static_cast<std::uint32_t>(indexer.shape[d]));
    }
  }
  return indexer;
}

}  // namespace tandem::ops
