// shape_fits: whether a shape read from a file can be an array's shape (core: the array file
// and IDX readers in io/ and the graph reader in graph/ all use it).
#pragma once

#include <cstdint>
#include <limits>

#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

// No negative dimension, and the product of the nonzero dimensions times `element_size` fits
// int64. An empty shape is no exception: Shape::num_elements and the strides multiply the other
// dimensions all the same, so 0 x 2^62 x 2^62 (whose strides overflow) and 2^62 x 2^62 x 0
// (whose element count overflows before the zero) are refused like 2^62 x 2^62.
inline bool shape_fits(const Shape& shape, std::uint64_t element_size) {
  constexpr auto kLimit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t product = element_size == 0 ? 1 : element_size;
  for (const std::int64_t dim : shape) {
    if (dim < 0) return false;
    if (dim == 0) continue;
    const auto udim = static_cast<std::uint64_t>(dim);
    if (product > kLimit / udim) return false;
    product *= udim;
  }
  return true;
}

}  // namespace tandem::nd::detail
