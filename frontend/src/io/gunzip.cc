// gunzip through zlib's inflate, with automatic gzip header detection (windowBits 15 + 32).
#include "io/gunzip.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "tandem/errors.h"

namespace tandem::nd::detail {
namespace {

[[noreturn]] void fail(const char* op, const std::string& path, const std::string& problem) {
  throw Error(std::string("tandem: ") + op + ": '" + path + "' " + problem);
}

// Ends the stream however the function is left.
struct InflateStream {
  z_stream stream{};
  ~InflateStream() { inflateEnd(&stream); }
};

}  // namespace

bool is_gzip(const std::vector<unsigned char>& bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::vector<unsigned char> gunzip(const char* op, const std::string& path,
                                  const std::vector<unsigned char>& bytes) {
  if (bytes.size() > std::numeric_limits<uInt>::max()) {
    fail(op, path, "is a gzip file over 4 GiB, more than this reader takes");
  }
  InflateStream inflater;
  z_stream& z = inflater.stream;
  if (inflateInit2(&z, 15 + 32) != Z_OK) {
    fail(op, path, "could not be decompressed: zlib's inflateInit2 failed");
  }
  z.next_in = const_cast<Bytef*>(bytes.data());
  z.avail_in = static_cast<uInt>(bytes.size());
  // The last 4 bytes of a one-member gzip file are its size modulo 2^32: used as the first
  // allocation only when plausible (a cut-short file ends in arbitrary bytes, and zeroing
  // gigabytes for them would take minutes); otherwise start at twice the input and double.
  const std::size_t n = bytes.size();
  std::size_t guess = std::max<std::size_t>(2 * n, 64 * 1024);
  if (n >= 18) {
    const std::size_t stated =
        static_cast<std::size_t>(bytes[n - 4]) | static_cast<std::size_t>(bytes[n - 3]) << 8 |
        static_cast<std::size_t>(bytes[n - 2]) << 16 | static_cast<std::size_t>(bytes[n - 1]) << 24;
    if (stated >= n / 2 && stated <= 16 * n) guess = stated + 1;  // + 1: room to see the end
  }
  std::vector<unsigned char> out(guess);
  std::size_t produced = 0;
  while (true) {
    if (produced == out.size()) out.resize(out.size() * 2);
    const std::size_t room =
        std::min<std::size_t>(out.size() - produced, std::numeric_limits<uInt>::max());
    z.next_out = out.data() + produced;
    z.avail_out = static_cast<uInt>(room);
    const int status = inflate(&z, Z_NO_FLUSH);
    produced += room - z.avail_out;
    if (status == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      // Another member follows (gunzip reads concatenated members); anything else is junk.
      if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) {
        fail(op, path,
             "is a corrupt gzip file: " + std::to_string(z.avail_in) +
                 " bytes that are not gzip follow the compressed data");
      }
      if (inflateReset(&z) != Z_OK) fail(op, path, "could not be decompressed (inflateReset)");
      continue;
    }
    if (status == Z_OK) continue;
    if (status == Z_BUF_ERROR && z.avail_in == 0) {
      fail(op, path,
           "is a truncated gzip file: the compressed data ends after " +
               std::to_string(bytes.size()) + " bytes, before the end of its stream");
    }
    if (status == Z_BUF_ERROR) continue;  // no progress for want of room: grow and go on
    fail(op, path,
         std::string("is a corrupt gzip file: ") + (z.msg != nullptr ? z.msg : "inflate failed") +
             " (at compressed byte " + std::to_string(bytes.size() - z.avail_in) + ")");
  }
  out.resize(produced);
  return out;
}

}  // namespace tandem::nd::detail
