// What crash_writer's save number n holds: "n" = [n], and "data" = this many values equal to n
// (growing, then wrapping around, so files range from a few bytes to ~1 MB).
#pragma once

#include <cstdint>

namespace tandem::testing {

inline std::int64_t crash_writer_data_size(std::int64_t n) {
  return 1 + (n * 7919) % 131072;
}

}  // namespace tandem::testing
