// The engine's internal assertions (engine/src/assertions.h): in a build with
// -DTANDEM_ASSERTIONS=ON, a broken invariant aborts the process naming it. Each case breaks one
// in a child process and checks that the child died of SIGABRT; in other builds they are
// compiled out and the cases only say so.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <tandem/accel/memory_pool.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/assertions.h"
#include "var_state.h"

namespace {

// Runs `broken` in a forked child (its output silenced); true if the child aborted.
template <class Fn>
bool aborts(Fn broken) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Quiet, and without doctest's crash handler (it would print a report for the child).
    std::signal(SIGABRT, SIG_DFL);
    if (std::freopen("/dev/null", "w", stderr) == nullptr ||
        std::freopen("/dev/null", "w", stdout) == nullptr) {
      std::_Exit(2);
    }
    broken();
    std::_Exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

struct MallocMemory final : tandem::RawAllocator {
  void* allocate(std::size_t bytes) override { return std::malloc(bytes); }
  void deallocate(void* data, std::size_t) noexcept override { std::free(data); }
};

}  // namespace

TEST_CASE("a var released for an access it never granted aborts in builds with assertions") {
  if (!TANDEM_ASSERTIONS_ON) {
    MESSAGE("assertions are compiled out in this build (-DTANDEM_ASSERTIONS=OFF)");
    return;
  }
  CHECK(aborts([] {
    tandem::detail::VarState var;
    var.release(/*was_write=*/true);  // nothing holds it
  }));
  CHECK(aborts([] {
    tandem::detail::VarState var;
    var.release(/*was_write=*/false);  // no reader holds it
  }));
}

TEST_CASE("a block freed to a pool that did not hand it out aborts in builds with assertions") {
  if (!TANDEM_ASSERTIONS_ON) {
    MESSAGE("assertions are compiled out in this build (-DTANDEM_ASSERTIONS=OFF)");
    return;
  }
  CHECK(aborts([] {
    tandem::MemoryPool a(tandem::cpu(), "host memory", std::make_unique<MallocMemory>());
    tandem::MemoryPool b(tandem::cpu(), "host memory", std::make_unique<MallocMemory>());
    const tandem::MemoryBlock block = a.allocate(1024);
    b.free(block);  // the wrong pool
  }));
  CHECK(aborts([] {
    tandem::MemoryPool pool(tandem::cpu(), "host memory", std::make_unique<MallocMemory>());
    const tandem::MemoryBlock block = pool.allocate(1024);
    pool.free(block);
    pool.free(block);  // twice
  }));
  // The rightful free passes.
  tandem::MemoryPool pool(tandem::cpu(), "host memory", std::make_unique<MallocMemory>());
  const tandem::MemoryBlock block = pool.allocate(1024);
  pool.free(block);
  CHECK(pool.stats().bytes_cached == block.bytes);
}
