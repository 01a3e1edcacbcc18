// FenceWaiter: where a ready CPU op waits for the device work behind its vars (its fences)
// without holding a CPU worker.
//
// A CPU op that reads a GPU result becomes ready as soon as the accelerator op that writes it
// has launched, long before the device work has ended (completion at launch, docs/design.md).
// Run on a worker at once, it would block that worker in a host wait for the device, and a
// pool of N workers would run no CPU compute while N such ops wait. So the threaded engine's
// dispatch checks, without blocking, whether a fenced CPU op's fences have ended; if not, the op
// comes here. One thread per engine (started on first use) waits for each op's fences in turn,
// sleeping in the backends' waits (blocking-sync events on cuda, a futex on sim), then hands
// the op to the CPU executor, where settle_fences finds every fence ended and only resolves
// errors and takes write fences off.
//
// Invariants:
// - An op here holds the grants of all its vars, so its fences cannot change meanwhile (a
//   writer is exclusive; other readers add read fences, which a reader does not wait for).
// - Device work never waits for a CPU op (an accelerator op launches only once its inputs'
//   CPU ops have completed), so every wait here ends without any worker's help: no deadlock.
// - Ops are handed on in the order they arrived (FIFO): an op whose fences end early may wait
//   behind one whose fences end later, a latency cost only, and only among fenced ops.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engine_core.h"

namespace tandem::detail {

class CpuExecutor;

class FenceWaiter {
 public:
  FenceWaiter(EngineCore& engine, CpuExecutor& cpu) : engine_(engine), cpu_(cpu) {}
  // Call only once no op is pending; hands on what is left, then joins the thread.
  ~FenceWaiter() { stop(); }
  FenceWaiter(const FenceWaiter&) = delete;
  FenceWaiter& operator=(const FenceWaiter&) = delete;

  // Takes a granted CPU op whose fences have not all ended. Throws (no memory, no thread) with
  // the op not taken: the caller then submits it to the CPU executor itself.
  void submit(OpRecord* op);

  // Joins the thread. Call only once no op is pending, and before the CPU executor goes: the
  // last op it handed on may complete (and let the engine shut down) while the thread is still
  // inside CpuExecutor::submit, waking a drainer. Idempotent.
  void stop();

 private:
  void run();

  EngineCore& engine_;
  CpuExecutor& cpu_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<OpRecord*> waiting_;  // guarded by mutex_
  bool stopping_ = false;          // guarded by mutex_
  std::thread thread_;             // started by the first submit, under mutex_
};

}  // namespace tandem::detail
