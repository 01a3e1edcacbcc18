// CRC-32 (the IEEE 802.3 / zlib / PNG polynomial, reflected, initial and final XOR 0xFFFFFFFF):
// the checksum that closes an array file, so that a flipped byte is an error, not wrong values.
//
//   crc32(bytes, size) == 0xCBF43926 for the nine ASCII bytes "123456789" (the standard check).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::nd::detail {

std::uint32_t crc32(const unsigned char* bytes, std::size_t size);

}  // namespace tandem::nd::detail
