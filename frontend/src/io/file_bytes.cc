// Whole files in and out of memory. Writing is crash-safe (file_bytes.h): the bytes go to a
// temporary file of their own in the target's directory, which is fsync'ed, renamed over the
// target, and the directory fsync'ed, so that after a crash (a killed process, or a power loss
// once the call has returned) the target holds either its old contents or the new ones, whole.
//
// Temporaries are named "<name>.tmp.<pid>.<n>": two writers of one path (threads or processes)
// never share one, and a temporary left by a writer killed mid-write names its process. Each
// write removes the temporaries of its target whose process is gone (kill(pid, 0) says ESRCH);
// those of live processes, this one included, may be writes under way and are left alone.
#include "io/file_bytes.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "tandem/detail/fault_injection.h"
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

// Test-only (tandem/detail/fault_injection.h): each step of a write is one "file" event; an
// injected failure looks like the step's system call failing with `error`.
thread_local bool t_step_injected = false;

bool step_fails(int error) {
  if (!tandem::detail::faults_armed() ||
      !tandem::detail::inject_fault(testing::FaultKind::file_write))
    return false;
  errno = error;
  t_step_injected = true;
  return true;
}

// "<step>: <errno's text>", and which injected fault it was.
std::string reason(const std::string& step) {
  std::string text = step + ": " + std::strerror(errno);
  if (std::exchange(t_step_injected, false)) {
    text += tandem::detail::injected_fault_note(testing::FaultKind::file_write);
  }
  return text;
}

int open_retrying(const char* path, int flags, mode_t mode = 0) {
  int fd = -1;
  do {
    fd = ::open(path, flags, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// The directory `path` is in ("." for a bare file name), and the file's name in it.
std::filesystem::path directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

// Removes "<name>.tmp.<pid>.<n>" files next to `path` whose writer process no longer exists.
// Best effort: a temporary that cannot be removed is left for the next write.
void remove_stale_temporaries(const std::string& path) {
  const std::string prefix = std::filesystem::path(path).filename().string() + ".tmp.";
  std::error_code error;
  std::filesystem::directory_iterator entries(directory_of(path), error);
  if (error) return;
  for (const std::filesystem::directory_entry& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '.' || pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or unknown
    std::filesystem::remove(entry.path(), error);
  }
}

// A temporary file of this write alone: created exclusively, removed unless committed.
class Temporary {
 public:
  Temporary(const char* op, const std::string& path) : op_(op), path_(path) {
    static std::atomic<unsigned long> next{0};
    for (;;) {
      name_ = path + ".tmp." + std::to_string(::getpid()) + "." +
              std::to_string(next.fetch_add(1, std::memory_order_relaxed));
      if (step_fails(ENOSPC)) fail(op_, "write", path_, reason("creating '" + name_ + "'"));
      fd_ = open_retrying(name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) return;
      if (errno != EEXIST) fail(op_, "write", path_, reason("creating '" + name_ + "'"));
    }
  }
  ~Temporary() {
    close();
    if (!committed_) ::unlink(name_.c_str());
  }
  Temporary(const Temporary&) = delete;
  Temporary& operator=(const Temporary&) = delete;

  void write(const std::vector<unsigned char>& bytes) {
    if (step_fails(ENOSPC)) fail(op_, "write", path_, reason("writing '" + name_ + "'"));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t wrote = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote < 0) fail(op_, "write", path_, reason("writing '" + name_ + "'"));
      done += static_cast<std::size_t>(wrote);
    }
  }

  // The bytes on the disk before the rename makes them the target's: otherwise a power loss
  // after the rename may leave the target empty or partial on some file systems.
  void sync_and_close() {
    if (step_fails(EIO) || ::fsync(fd_) != 0) {
      fail(op_, "write", path_, reason("fsync of '" + name_ + "'"));
    }
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 && errno != EINTR) {
      fail(op_, "write", path_, reason("closing '" + name_ + "'"));
    }
  }

  void rename_over_target() {
    if (step_fails(EIO) || std::rename(name_.c_str(), path_.c_str()) != 0) {
      fail(op_, "write", path_, reason("renaming '" + name_ + "' over it"));
    }
    committed_ = true;
  }

 private:
  void close() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

  const char* op_;
  const std::string& path_;
  std::string name_;
  int fd_ = -1;
  bool committed_ = false;
};

// The rename itself on the disk. File systems that cannot fsync a directory say EINVAL: there is
// nothing more to do on them.
void sync_directory(const char* op, const std::string& path) {
  const std::string directory = directory_of(path).string();
  const int fd = open_retrying(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool failed = fd < 0 || step_fails(EIO) || (::fsync(fd) != 0 && errno != EINVAL);
  const int saved = errno;
  if (fd >= 0) ::close(fd);
  if (failed) {
    errno = saved;
    fail(op, "write", path,
         reason("fsync of its directory '" + directory +
                "' (the new contents are in place but may not survive a power loss)"));
  }
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
  remove_stale_temporaries(path);
  {
    Temporary temporary(op, path);
    temporary.write(bytes);
    temporary.sync_and_close();
    temporary.rename_over_target();
  }
  sync_directory(op, path);
}

}  // namespace tandem::nd::detail
