// operator<<: MXNet's text form of an array, values then a tag.
//
//   [[1. 2. 3.]
//    [4. 5. 6.]]
//   <NDArray 2x3 @cpu(0)>
//
// Floating values print like NumPy's default: up to 8 significant digits, a trailing "." for
// integral values, and scientific notation when magnitudes are very large or small. Columns are
// padded to one width. Past 1000 elements, each axis shows its first and last 3 entries.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "core/modes.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd {

namespace {

constexpr std::int64_t kSummarizeAbove = 1000;
constexpr std::int64_t kEdgeItems = 3;

std::string format_floating(double v, bool scientific) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[64];
  if (scientific) {
    std::snprintf(buffer, sizeof buffer, "%.7e", v);
    return buffer;
  }
  if (v == std::floor(v) && std::fabs(v) < 1e16) {
    std::snprintf(buffer, sizeof buffer, "%.0f.", v);
    return buffer;
  }
  std::snprintf(buffer, sizeof buffer, "%.8g", v);
  return buffer;
}

struct Printer {
  const Shape& shape;
  const std::vector<double>& values;          // floating arrays
  const std::vector<std::int64_t>& integers;  // integer arrays (exact past 2^53)
  bool integral;
  bool scientific;
  bool summarize;
  std::size_t width = 0;

  std::string text(std::int64_t index) const {
    const auto i = static_cast<std::size_t>(index);
    if (integral) return std::to_string(integers[i]);
    return format_floating(values[i], scientific);
  }

  // Indices shown along an axis of extent n; -1 stands for "...".
  std::vector<std::int64_t> shown(std::int64_t n) const {
    std::vector<std::int64_t> indices;
    if (!summarize || n <= 2 * kEdgeItems) {
      for (std::int64_t i = 0; i < n; ++i) indices.push_back(i);
      return indices;
    }
    for (std::int64_t i = 0; i < kEdgeItems; ++i) indices.push_back(i);
    indices.push_back(-1);
    for (std::int64_t i = n - kEdgeItems; i < n; ++i) indices.push_back(i);
    return indices;
  }

  void measure(int axis, std::int64_t base) {
    if (axis == shape.ndim()) {
      width = std::max(width, text(base).size());
      return;
    }
    for (std::int64_t i : shown(shape[axis])) {
      if (i >= 0) measure(axis + 1, base * shape[axis] + i);
    }
  }

  void print(std::ostream& out, int axis, std::int64_t base) const {
    if (axis == shape.ndim()) {
      const std::string s = text(base);
      out << std::string(width - s.size(), ' ') << s;
      return;
    }
    out << '[';
    const auto indices = shown(shape[axis]);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      if (k > 0) {
        if (axis == shape.ndim() - 1) {
          out << ' ';
        } else {
          out << std::string(static_cast<std::size_t>(shape.ndim() - 1 - axis), '\n')
              << std::string(static_cast<std::size_t>(axis + 1), ' ');
        }
      }
      if (indices[k] < 0) {
        out << "...";
      } else {
        print(out, axis + 1, base * shape[axis] + indices[k]);
      }
    }
    out << ']';
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& out, const NDArray& array) {
  if (!array.defined()) return out << "<NDArray null>";
  detail::throw_if_capturing("printing an NDArray");
  const bool integral = !ops::is_floating(array.dtype());
  const std::vector<double> values = integral ? std::vector<double>() : array.to_vector<double>();
  const std::vector<std::int64_t> integers =
      integral ? array.to_vector<std::int64_t>() : std::vector<std::int64_t>();
  const Shape& shape = array.shape();
  Printer printer{shape, values, integers, integral, false, array.size() > kSummarizeAbove};
  if (!printer.integral) {
    double largest = 0, smallest = 0;
    for (double v : values) {
      if (!std::isfinite(v) || v == 0) continue;
      largest = std::max(largest, std::fabs(v));
      smallest = smallest == 0 ? std::fabs(v) : std::min(smallest, std::fabs(v));
    }
    printer.scientific = largest >= 1e8 || (smallest > 0 && smallest < 1e-4);
  }
  printer.measure(0, 0);
  if (shape.ndim() == 0) {
    out << printer.text(0);
  } else {
    printer.print(out, 0, 0);
  }
  out << "\n<NDArray " << (shape.ndim() == 0 ? std::string("0-d") : shape.to_string()) << " @"
      << array.device() << '>';
  return out;
}

}  // namespace tandem::nd
