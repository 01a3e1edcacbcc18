// StridedLayout and for_each_run: walking N arrays of one shape but arbitrary strides, in
// row-major order of that shape, as runs along the innermost dimension.
//
// make_layout first drops dimensions of extent 1 and merges neighbouring dimensions that every
// operand walks as one (stride[i] == stride[i + 1] * shape[i + 1]): a dense array becomes a
// single run, a sliced matrix one run per row. Kernels then only write the innermost loop, with
// fast paths for stride 1 (dense) and 0 (broadcast).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "tandem/ops/array_view.h"

namespace tandem::ops {

template <int N>
struct StridedLayout {
  int ndim = 1;  // at least 1 after make_layout
  std::array<std::int64_t, kMaxDims> shape{};
  std::array<std::array<std::int64_t, kMaxDims>, N> strides{};

  std::int64_t num_elements() const {
    std::int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[static_cast<std::size_t>(i)];
    return n;
  }
  // Stride of operand k along the innermost (run) dimension.
  std::int64_t inner_stride(int k) const {
    return strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(ndim - 1)];
  }
};

// Layout of N operands that all have `shape`, with the given strides.
template <int N>
StridedLayout<N> make_layout(const Shape& shape, const std::array<const Strides*, N>& strides) {
  StridedLayout<N> layout;
  int out = 0;
  for (int i = 0; i < shape.ndim(); ++i) {
    const auto si = static_cast<std::size_t>(i);
    if (shape[i] == 1) continue;
    if (out > 0) {
      const auto prev = static_cast<std::size_t>(out - 1);
      bool mergeable = true;
      for (int k = 0; k < N; ++k) {
        const auto& s = *strides[static_cast<std::size_t>(k)];
        mergeable =
            mergeable && layout.strides[static_cast<std::size_t>(k)][prev] == s[si] * shape[i];
      }
      if (mergeable) {
        layout.shape[prev] *= shape[i];
        for (int k = 0; k < N; ++k) {
          layout.strides[static_cast<std::size_t>(k)][prev] =
              (*strides[static_cast<std::size_t>(k)])[si];
        }
        continue;
      }
    }
    const auto o = static_cast<std::size_t>(out);
    layout.shape[o] = shape[i];
    for (int k = 0; k < N; ++k) {
      layout.strides[static_cast<std::size_t>(k)][o] = (*strides[static_cast<std::size_t>(k)])[si];
    }
    ++out;
  }
  if (out == 0) {  // every dimension has extent 1 (or it is 0-d): a single element
    layout.shape[0] = shape.num_elements() == 0 ? 0 : 1;
    out = 1;
  }
  // A zero extent anywhere means no elements at all.
  if (shape.num_elements() == 0) {
    layout.shape[0] = 0;
    out = 1;
  }
  layout.ndim = out;
  return layout;
}

// Calls run(offsets, count) for the elements [begin, end) of the row-major order of the
// layout's shape, where offsets[k] is operand k's element offset of the run's first element
// and the run continues with inner_stride(k) for `count` elements.
template <int N, class Run>
void for_each_run(const StridedLayout<N>& layout, std::int64_t begin, std::int64_t end, Run&& run) {
  if (begin >= end) return;
  const int last = layout.ndim - 1;
  std::array<std::int64_t, kMaxDims> index{};
  std::array<std::int64_t, N> offset{};
  std::int64_t rest = begin;
  for (int i = last; i >= 0; --i) {
    const auto si = static_cast<std::size_t>(i);
    index[si] = rest % layout.shape[si];
    rest /= layout.shape[si];
    for (std::size_t k = 0; k < N; ++k) offset[k] += index[si] * layout.strides[k][si];
  }
  const auto sl = static_cast<std::size_t>(last);
  for (std::int64_t pos = begin; pos < end;) {
    const std::int64_t count = std::min(layout.shape[sl] - index[sl], end - pos);
    run(offset, count);
    pos += count;
    index[sl] += count;
    for (std::size_t k = 0; k < N; ++k) offset[k] += count * layout.strides[k][sl];
    // Carry into the outer dimensions.
    for (int i = last;
         i > 0 && index[static_cast<std::size_t>(i)] == layout.shape[static_cast<std::size_t>(i)];
         --i) {
      const auto si = static_cast<std::size_t>(i);
      for (std::size_t k = 0; k < N; ++k) {
        offset[k] += layout.strides[k][si - 1] - index[si] * layout.strides[k][si];
      }
      index[si] = 0;
      ++index[si - 1];
    }
  }
}

}  // namespace tandem::ops
