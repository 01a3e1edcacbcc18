// Shape: the extent of each dimension of an array, up to kMaxDims dimensions, stored inline so
// that passing shapes around never allocates.
//
//   tandem::ops::Shape s{2, 3};          // s.ndim() == 2, s.num_elements() == 6, prints "2x3"
//   broadcast_shapes({2, 1}, {3}, "add") == Shape{2, 3}
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>

namespace tandem::ops {

inline constexpr int kMaxDims = 8;

class Shape {
 public:
  Shape() = default;
  // Throws tandem::Error past kMaxDims dimensions.
  Shape(std::initializer_list<std::int64_t> dims);
  template <class It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<std::int64_t>(*first));
  }

  int ndim() const { return ndim_; }
  std::int64_t operator[](int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
  std::int64_t& operator[](int axis) { return dims_[static_cast<std::size_t>(axis)]; }
  const std::int64_t* begin() const { return dims_.data(); }
  const std::int64_t* end() const { return dims_.data() + ndim_; }

  // Product of the dimensions (1 for a 0-d shape). Unchecked: see checked_num_elements.
  std::int64_t num_elements() const;

  void push_back(std::int64_t dim);
  Shape without_axis(int axis) const;

  // "2x3"; a 0-d shape prints as "()".
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b);

 private:
  int ndim_ = 0;
  std::array<std::int64_t, kMaxDims> dims_{};
};

std::ostream& operator<<(std::ostream& out, const Shape& shape);

// Strides in elements, one per dimension.
using Strides = std::array<std::int64_t, kMaxDims>;

// Row-major (C order) strides of a dense array of `shape`.
Strides contiguous_strides(const Shape& shape);

// Number of elements of `shape`, after checking that no dimension is negative and that neither
// the element count nor the byte count (`element_bytes` each) overflows. Throws tandem::Error
// naming `op` and the shape otherwise.
std::int64_t checked_num_elements(const Shape& shape, std::size_t element_bytes, const char* op);

// NumPy broadcasting: dimensions are matched from the right and must be equal or 1. Throws
// tandem::Error naming `op` and both shapes otherwise.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Maps a possibly negative axis (-1 = last) into [0, ndim); throws tandem::Error naming `op`,
// the axis and the shape when it is out of range.
int normalize_axis(int axis, const Shape& shape, const char* op);

}  // namespace tandem::ops
