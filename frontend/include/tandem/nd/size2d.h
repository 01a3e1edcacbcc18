// Size2d: a (height, width) pair for the window options of convolution and pooling. One number
// means both: `{.stride = 2}` is stride 2x2, `{.padding = {1, 0}}` pads rows only.
#pragma once

#include <cstdint>
#include <string>

namespace tandem::nd {

struct Size2d {
  std::int64_t h = 0;
  std::int64_t w = 0;

  constexpr Size2d() = default;
  constexpr Size2d(std::int64_t both) : h(both), w(both) {}  // NOLINT: implicit on purpose
  constexpr Size2d(std::int64_t height, std::int64_t width) : h(height), w(width) {}

  friend constexpr bool operator==(const Size2d&, const Size2d&) = default;
  // "3x3"
  std::string to_string() const { return std::to_string(h) + "x" + std::to_string(w); }
};

}  // namespace tandem::nd
