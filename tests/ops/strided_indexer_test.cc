// The CUDA kernels' addressing (ops/src/common/strided_indexer.h), on the host: FastDivider
// against the `/` operator, and StridedIndexer's offsets, 31-bit and 64-bit paths, against
// coordinates unravelled one by one from the view's own shape and strides. On a GPU the same
// code runs with __umulhi, which the host form restates.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/strided_indexer.h"

namespace ops = tandem::ops;

namespace {

constexpr std::uint32_t kLargest = std::numeric_limits<std::int32_t>::max();  // 2^31 - 1

void check_divider(std::uint32_t divisor, std::mt19937& rng) {
  const ops::FastDivider divider(divisor);
  std::vector<std::uint32_t> numerators = {0, 1, 2, kLargest, kLargest - 1};
  for (std::uint32_t k = 1; k <= 4; ++k) {
    const std::uint64_t multiple = std::uint64_t{divisor} * k;
    for (std::uint64_t n : {multiple - 1, multiple, multiple + 1}) {
      if (n <= kLargest) numerators.push_back(static_cast<std::uint32_t>(n));
    }
  }
  std::uint64_t last_multiple = std::uint64_t{kLargest} / divisor * divisor;
  numerators.push_back(static_cast<std::uint32_t>(last_multiple));
  if (last_multiple > 0) numerators.push_back(static_cast<std::uint32_t>(last_multiple - 1));
  std::uniform_int_distribution<std::uint32_t> any(0, kLargest);
  for (int i = 0; i < 200; ++i) numerators.push_back(any(rng));
  for (const std::uint32_t n : numerators) {
    if (divider.divide(n) != n / divisor) {
      FAIL_CHECK("FastDivider(" << divisor << ").divide(" << n << ") = " << divider.divide(n)
                                << ", expected " << n / divisor);
    }
  }
}

// The offset of element `linear` of a view, coordinate by coordinate.
std::int64_t naive_offset(std::int64_t linear, const ops::Shape& shape,
                          const ops::Strides& strides) {
  std::int64_t offset = 0;
  for (int d = shape.ndim() - 1; d >= 0; --d) {
    offset += (linear % shape[d]) * strides[static_cast<std::size_t>(d)];
    linear /= shape[d];
  }
  return offset;
}

}  // namespace

TEST_SUITE("ops.strided_indexer") {
  TEST_CASE("FastDivider divides every 31-bit numerator like the / operator") {
    std::mt19937 rng(7);
    for (std::uint32_t divisor = 1; divisor <= 5000; ++divisor) check_divider(divisor, rng);
    for (int bit = 12; bit <= 30; ++bit) {
      const std::uint32_t power = std::uint32_t{1} << bit;
      for (std::uint32_t divisor : {power - 1, power, power + 1, power + power / 3}) {
        check_divider(divisor, rng);
      }
    }
    for (std::uint32_t divisor : {kLargest, kLargest - 1, 1'000'000'007u, 65'537u, 46'341u}) {
      check_divider(divisor, rng);
    }
  }

  TEST_CASE("offsets match unravelled coordinates, for views of up to five dimensions") {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> dims(1, 5), extent(1, 40), stride(0, 90);
    for (int trial = 0; trial < 300; ++trial) {
      ops::Shape shape;
      ops::Strides a{}, b{};
      const int ndim = dims(rng);
      std::vector<std::int64_t> extents;
      for (int d = 0; d < ndim; ++d) extents.push_back(extent(rng));
      shape = ops::Shape(extents.begin(), extents.end());
      // b dense (so that make_layout can merge), a anything, 0 (broadcast) included.
      std::int64_t dense = 1;
      for (int d = ndim - 1; d >= 0; --d) {
        const auto sd = static_cast<std::size_t>(d);
        b[sd] = dense;
        dense *= shape[d];
        a[sd] = trial % 3 == 0 ? b[sd] : stride(rng) % 7 == 0 ? 0 : stride(rng);
      }
      CAPTURE(shape.to_string());
      auto indexer = ops::make_indexer<2>(shape, {&a, &b});
      CHECK(indexer.small);
      auto wide = indexer;
      wide.small = false;  // the 64-bit path, same answers
      for (std::int64_t i = 0; i < shape.num_elements(); ++i) {
        std::int64_t off[2], wide_off[2];
        indexer.offsets(i, off);
        wide.offsets(i, wide_off);
        if (off[0] != naive_offset(i, shape, a) || off[1] != naive_offset(i, shape, b) ||
            wide_off[0] != off[0] || wide_off[1] != off[1]) {
          FAIL_CHECK("element " << i << ": offsets " << off[0] << ", " << off[1] << " (64-bit "
                                << wide_off[0] << ", " << wide_off[1] << "), expected "
                                << naive_offset(i, shape, a) << ", " << naive_offset(i, shape, b));
          break;
        }
      }
    }
  }

  TEST_CASE("arrays of 2^31 elements or more take the 64-bit path; empty ones index nothing") {
    const ops::Shape big{65536, 32768};  // 2^31 elements
    const ops::Strides transposed{1, 65536};
    const auto indexer = ops::make_indexer<1>(big, {&transposed});
    CHECK_FALSE(indexer.small);
    for (std::int64_t i : {std::int64_t{0}, std::int64_t{32767}, std::int64_t{32768},
                           big.num_elements() - 1, (std::int64_t{1} << 30) + 12345}) {
      std::int64_t off[1];
      indexer.offsets(i, off);
      CHECK(off[0] == naive_offset(i, big, transposed));
    }
    const ops::Shape largest_small{kLargest};
    const ops::Strides unit{1};
    CHECK(ops::make_indexer<1>(largest_small, {&unit}).small);
    const ops::Shape empty{4, 0, 3};
    const ops::Strides empty_strides{0, 3, 1};
    CHECK_FALSE(ops::make_indexer<1>(empty, {&empty_strides}).small);
  }
}
