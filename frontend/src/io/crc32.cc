#include "io/crc32.h"

#include <array>

namespace tandem::nd::detail {
namespace {

// One entry per byte value: the remainder of that byte shifted through the polynomial.
constexpr std::array<std::uint32_t, 256> make_table() {
  constexpr std::uint32_t reflected_polynomial = 0xEDB88320u;
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t remainder = byte;
    for (int bit = 0; bit < 8; ++bit) {
      remainder = (remainder & 1u) != 0 ? (remainder >> 1) ^ reflected_polynomial : remainder >> 1;
    }
    table[byte] = remainder;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kTable = make_table();

}  // namespace

std::uint32_t crc32(const unsigned char* bytes, std::size_t size) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) {
    crc = kTable[(crc ^ bytes[i]) & 0xFFu] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace tandem::nd::detail
