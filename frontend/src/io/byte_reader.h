// ByteReader: walks the bytes of a file held in memory, refusing to read past their end.
//
// Every read names what it reads, so a short file fails with "truncated at byte 20: <what>
// needs 8 bytes, 3 are left" instead of reading out of bounds. Readers of file formats parse
// through it and never index the buffer themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/byte_order.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

class ByteReader {
 public:
  // `op` and `path` name the call and the file in error messages; both must outlive the reader.
  ByteReader(const char* op, const std::string& path, const std::vector<unsigned char>& bytes)
      : op_(op), path_(path), bytes_(bytes) {}

  std::size_t offset() const { return offset_; }
  std::size_t remaining() const { return bytes_.size() - offset_; }

  // The next `count` bytes (a pointer into the buffer), after checking they exist.
  const unsigned char* take(std::size_t count, const std::string& what) {
    if (count > remaining()) {
      fail("truncated at byte " + std::to_string(offset_) + ": " + what + " needs " +
           std::to_string(count) + " bytes, " + std::to_string(remaining()) + " are left");
    }
    const unsigned char* at = bytes_.data() + offset_;
    offset_ += count;
    return at;
  }
  std::uint64_t little_endian(int width, const std::string& what) {
    return decode_little_endian(take(static_cast<std::size_t>(width), what), width);
  }
  std::uint64_t big_endian(int width, const std::string& what) {
    return decode_big_endian(take(static_cast<std::size_t>(width), what), width);
  }

  // Throws tandem::Error "tandem: <op>: '<path>' <problem>".
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(std::string("tandem: ") + op_ + ": '" + path_ + "' " + problem);
  }

 private:
  const char* op_;
  const std::string& path_;
  const std::vector<unsigned char>& bytes_;
  std::size_t offset_ = 0;
};

}  // namespace tandem::nd::detail
