// Whole files in and out of memory, with errors that name the file.
#pragma once

#include <string>
#include <vector>

namespace tandem::nd::detail {

// The bytes of the file at `path`. Throws tandem::Error "<op>: cannot read '<path>': <reason>"
// when it is missing, unreadable or a directory.
std::vector<unsigned char> read_file_bytes(const char* op, const std::string& path);

// Writes `bytes` to `path` through a temporary file of its own in the same directory
// ("<path>.tmp.<pid>.<n>"), fsync'ed, renamed over `path` once complete, then the directory
// fsync'ed: a failed, killed or power-cut write never leaves a half-written file under the
// final name, and once the call returns the new contents survive a crash. Temporaries left by
// writers of `path` that were killed (their process is gone) are removed. Throws tandem::Error
// naming the file, the step that failed and the reason.
void write_file_bytes(const char* op, const std::string& path,
                      const std::vector<unsigned char>& bytes);

}  // namespace tandem::nd::detail
