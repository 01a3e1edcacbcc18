// gzip_bytes: a gzip file's bytes, made with zlib, for tests that write their own .gz files.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace tandem::testing {

inline std::vector<unsigned char> gzip_bytes(const std::vector<unsigned char>& plain) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::vector<unsigned char> out(deflateBound(&z, static_cast<uLong>(plain.size())) + 64);
  z.next_in = const_cast<Bytef*>(plain.data());
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (status != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  // A copy of the written bytes, not out.resize(): GCC 12 under -fsanitize=address -O2 cannot
  // see that the new size is smaller and warns (stringop-overflow) in resize's growing path.
  const auto written = static_cast<std::size_t>(z.total_out);
  if (written > out.size()) throw std::runtime_error("deflate wrote past its bound");
  return std::vector<unsigned char>(out.begin(),
                                    out.begin() + static_cast<std::ptrdiff_t>(written));
}

}  // namespace tandem::testing
