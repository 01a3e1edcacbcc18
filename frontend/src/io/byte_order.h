// Fixed-width integers to and from bytes in a stated byte order, independent of the host's.
//
// The array file (little-endian) and the IDX format (big-endian) name their byte order; these
// helpers are how their readers and writers honour it on any host.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::nd::detail {

// Appends the `width` low bytes of `value` to `out`.
inline void append_little_endian(std::vector<unsigned char>& out, std::uint64_t value, int width) {
  for (int i = 0; i < width; ++i) {
    out.push_back(static_cast<unsigned char>(value >> (8 * i)));
  }
}
inline void append_big_endian(std::vector<unsigned char>& out, std::uint64_t value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out.push_back(static_cast<unsigned char>(value >> (8 * i)));
  }
}

inline std::uint64_t decode_little_endian(const unsigned char* bytes, int width) {
  std::uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | bytes[i];
  }
  return value;
}
inline std::uint64_t decode_big_endian(const unsigned char* bytes, int width) {
  std::uint64_t value = 0;
  for (int i = 0; i < width; ++i) {
    value = (value << 8) | bytes[i];
  }
  return value;
}

// Reverses the bytes of each `element_size`-byte element of `bytes` in place.
inline void swap_element_bytes(unsigned char* bytes, std::size_t count, std::size_t element_size) {
  for (std::size_t e = 0; e < count; ++e) {
    unsigned char* element = bytes + e * element_size;
    for (std::size_t i = 0; i < element_size / 2; ++i) {
      const unsigned char byte = element[i];
      element[i] = element[element_size - 1 - i];
      element[element_size - 1 - i] = byte;
    }
  }
}

// Converts elements between the host's order and little-endian (the same call both ways).
inline void host_to_from_little_endian(unsigned char* bytes, std::size_t count,
                                       std::size_t element_size) {
  if constexpr (std::endian::native == std::endian::big) {
    swap_element_bytes(bytes, count, element_size);
  }
}
inline void host_to_from_big_endian(unsigned char* bytes, std::size_t count,
                                    std::size_t element_size) {
  if constexpr (std::endian::native == std::endian::little) {
    swap_element_bytes(bytes, count, element_size);
  }
}

}  // namespace tandem::nd::detail
