#include "io/file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "tandem/errors.h"

namespace tandem::nd::detail {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

[[noreturn]] void fail(const char* op, const char* action, const std::string& path,
                       const std::string& reason) {
  throw Error(std::string("tandem: ") + op + ": cannot " + action + " '" + path + "': " + reason);
}

}  // namespace

std::vector<unsigned char> read_file_bytes(const char* op, const std::string& path) {
  std::error_code status_error;
  if (std::filesystem::is_directory(path, status_error)) {
    fail(op, "read", path, "it is a directory");
  }
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    fail(op, "read", path, std::strerror(errno));
  }
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  while (true) {
    const std::size_t got = std::fread(chunk, 1, sizeof chunk, file.get());
    bytes.insert(bytes.end(), chunk, chunk + got);
    if (got < sizeof chunk) {
      break;
    }
  }
  if (std::ferror(file.get()) != 0) {
    fail(op, "read", path, "read error");
  }
  return bytes;
}

void write_file_bytes(const char* op, const std::string& path,
                      const std::vector<unsigned char>& bytes) {
  const std::string temporary = path + ".tmp";
  {
    FilePtr file(std::fopen(temporary.c_str(), "wb"));
    if (!file) {
      fail(op, "write", path,
           std::string("cannot create '") + temporary + "': " + std::strerror(errno));
    }
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file.get()) == bytes.size();
    const bool flushed = std::fflush(file.get()) == 0;
    if (!written || !flushed) {
      const std::string reason = std::strerror(errno);
      file.reset();
      std::remove(temporary.c_str());
      fail(op, "write", path, reason);
    }
  }
  std::error_code rename_error;
  std::filesystem::rename(temporary, path, rename_error);
  if (rename_error) {
    std::remove(temporary.c_str());
    fail(op, "write", path, "renaming '" + temporary + "' failed: " + rename_error.message());
  }
}

}  // namespace tandem::nd::detail
