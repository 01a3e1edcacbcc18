#include "tandem/ops/shape.h"

#include <limits>
#include <sstream>

#include "tandem/errors.h"

namespace tandem::ops {

Shape::Shape(std::initializer_list<std::int64_t> dims) {
  for (std::int64_t dim : dims) push_back(dim);
}

std::int64_t Shape::num_elements() const {
  std::int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

void Shape::push_back(std::int64_t dim) {
  if (ndim_ == kMaxDims) {
    throw Error("tandem: an array has at most " + std::to_string(kMaxDims) + " dimensions; " +
                to_string() + " cannot take another one");
  }
  dims_[static_cast<std::size_t>(ndim_++)] = dim;
}

Shape Shape::without_axis(int axis) const {
  Shape out;
  for (int i = 0; i < ndim_; ++i) {
    if (i != axis) out.push_back((*this)[i]);
  }
  return out;
}

std::string Shape::to_string() const {
  if (ndim_ == 0) return "()";
  std::string text;
  for (int i = 0; i < ndim_; ++i) {
    if (i > 0) text += 'x';
    text += std::to_string((*this)[i]);
  }
  return text;
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.ndim_ != b.ndim_) return false;
  for (int i = 0; i < a.ndim_; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) {
  return out << shape.to_string();
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides{};
  std::int64_t step = 1;
  for (int i = shape.ndim() - 1; i >= 0; --i) {
    strides[static_cast<std::size_t>(i)] = step;
    step *= shape[i];
  }
  return strides;
}

std::int64_t checked_num_elements(const Shape& shape, std::size_t element_bytes, const char* op) {
  // Bytes must fit in a signed 64-bit offset, so every element index and byte offset does too.
  const auto limit = std::numeric_limits<std::int64_t>::max() /
                     static_cast<std::int64_t>(element_bytes == 0 ? 1 : element_bytes);
  std::int64_t n = 1;
  bool has_zero = false;
  bool overflow = false;
  for (std::int64_t dim : shape) {
    if (dim < 0) {
      throw Error(std::string("tandem: ") + op + ": shape " + shape.to_string() +
                  " has a negative dimension");
    }
    if (dim == 0) {  // n stays the product of the other dimensions: the strides'
      has_zero = true;
      continue;
    }
    if (!overflow && n > limit / dim) overflow = true;
    if (!overflow) n *= dim;
  }
  // An empty shape is refused too when its other dimensions overflow: its strides are their
  // products.
  if (overflow) {
    throw Error(std::string("tandem: ") + op + ": shape " + shape.to_string() +
                (has_zero ? " is too large: its dimensions other than 0 multiply past a 64-bit "
                            "integer (its strides would overflow)"
                          : " is too large: its size in bytes overflows a 64-bit integer"));
  }
  return has_zero ? 0 : n;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int ndim = std::max(a.ndim(), b.ndim());
  Shape out;
  for (int i = 0; i < ndim; ++i) {
    // Align from the right; a missing dimension counts as 1.
    const int ia = i - (ndim - a.ndim());
    const int ib = i - (ndim - b.ndim());
    const std::int64_t da = ia >= 0 ? a[ia] : 1;
    const std::int64_t db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw Error(std::string("tandem: ") + op + ": shapes " + a.to_string() + " and " +
                  b.to_string() + " cannot be broadcast together (dimension " + std::to_string(i) +
                  " of the result: " + std::to_string(da) + " vs " + std::to_string(db) +
                  "; each must match or be 1)");
    }
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

int normalize_axis(int axis, const Shape& shape, const char* op) {
  const int ndim = shape.ndim();
  if (axis < -ndim || axis >= ndim) {
    throw Error(std::string("tandem: ") + op + ": axis " + std::to_string(axis) +
                " is out of range for an array of " + std::to_string(ndim) +
                " dimension(s) (shape " + shape.to_string() + "); valid axes are " +
                (ndim == 0 ? std::string("none")
                           : std::to_string(-ndim) + " to " + std::to_string(ndim - 1)));
  }
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace tandem::ops
