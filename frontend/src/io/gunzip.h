// gzip in memory: the .gz files of MNIST and Fashion-MNIST (Debian ships them compressed).
#pragma once

#include <string>
#include <vector>

namespace tandem::nd::detail {

// True when `bytes` start with gzip's magic number (0x1f 0x8b).
bool is_gzip(const std::vector<unsigned char>& bytes);

// The decompressed contents of the gzip stream in `bytes` (every member, as gunzip does).
// Throws tandem::Error "tandem: <op>: '<path>' is a corrupt gzip file: <zlib's reason>" or
// "... is a truncated gzip file ..." naming the file, for a stream that is damaged or cut short.
std::vector<unsigned char> gunzip(const char* op, const std::string& path,
                                  const std::vector<unsigned char>& bytes);

}  // namespace tandem::nd::detail
