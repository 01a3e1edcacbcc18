// Measuring a piece of work's memory and time in a fresh child process, so that the peaks of
// different configurations never mix (a process's peak RSS only grows, and freed memory often
// stays mapped). Shared by examples/async_memory and the frontend benchmark.
//
//   MemoryRun run = run_in_child([] { train(...); });
//   run.peak_rss_mb, run.seconds
//
// The work runs in a forked child; call this before the parent has started any thread (no
// engine yet), since only the forking thread survives a fork.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <type_traits>

namespace tandem::examples {

struct MemoryRun {
  bool ok = false;
  double seconds = 0;        // the work, wall clock
  double rss_before_mb = 0;  // resident memory right before the work
  double peak_rss_mb = 0;    // peak resident memory during the work
  char error[160] = {};
};

// A field of /proc/self/status in MB ("VmRSS", "VmHWM"); 0 when unreadable.
inline double status_mb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size())) / 1024.0;
  }
  return 0;
}

// Restarts the peak (VmHWM) at the current RSS; false where the kernel does not support it.
inline bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  return static_cast<bool>(clear.flush());
}

// Runs body(result) in a forked child and returns the `result` it filled. Result is a
// trivially copyable struct with `bool ok` and `char error[N]`: an exception from the body,
// a failed fork, or a child that dies without answering comes back as ok == false with the
// reason in error.
template <class Result, class Body>
Result run_in_child_process(Body&& body) {
  static_assert(std::is_trivially_copyable_v<Result>, "the result crosses a pipe as bytes");
  Result result{};
  int fds[2];
  if (pipe(fds) != 0) {
    std::snprintf(result.error, sizeof result.error, "pipe: %s", std::strerror(errno));
    return result;
  }
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    Result run{};
    try {
      body(run);
    } catch (const std::exception& e) {
      run.ok = false;
      std::snprintf(run.error, sizeof run.error, "%s", e.what());
    }
    const ssize_t written = write(fds[1], &run, sizeof run);
    _exit(written == static_cast<ssize_t>(sizeof run) ? 0 : 1);
  }
  close(fds[1]);
  if (child < 0) {
    std::snprintf(result.error, sizeof result.error, "fork: %s", std::strerror(errno));
    close(fds[0]);
    return result;
  }
  const ssize_t got = read(fds[0], &result, sizeof result);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (got != static_cast<ssize_t>(sizeof result)) {
    result = Result{};
    std::snprintf(result.error, sizeof result.error, "the child died (status %d)", status);
  }
  return result;
}

// Runs setup() then work() in a child; the peak covers work() only when the kernel lets the
// peak be reset (Linux >= 4.0), else the whole child.
template <class Setup, class Work>
MemoryRun run_in_child(Setup&& setup, Work&& work) {
  return run_in_child_process<MemoryRun>([&](MemoryRun& run) {
    setup();
    run.rss_before_mb = status_mb("VmRSS");
    reset_peak_rss();
    const auto start = std::chrono::steady_clock::now();
    work();
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.peak_rss_mb = status_mb("VmHWM");
    run.ok = true;
  });
}

}  // namespace tandem::examples
