// Whole files in and out of memory, with errors that name the file.
#pragma once

#include <string>
#include <vector>

namespace tandem::nd::detail {

// The bytes of the file at `path`. Throws tandem::Error "<op>: cannot read '<path>': <reason>"
// when it is missing, unreadable or a directory.
std::vector<unsigned char> read_file_bytes(const char* op, const std::string& path);

// Writes `bytes` to `path` through a temporary file in the same directory that is renamed over
// `path` once complete, so a failed or interrupted write never leaves a half-written file under
// the final name. Throws tandem::Error naming the file and the reason.
void write_file_bytes(const char* op, const std::string& path,
                      const std::vector<unsigned char>& bytes);

}  // namespace tandem::nd::detail
