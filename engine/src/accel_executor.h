// AcceleratorExecutor: where a threaded engine's ready ops for one accelerator (sim(i), cuda(i))
// are launched.
//
// One launcher thread per device takes ready ops from a priority queue (higher priority first,
// FIFO among equals) and launches each on the stream its StreamChooser picks (a dependency chain
// stays on its producer's stream, independent compute ops go round-robin): EngineCore::launch makes
// the stream wait for the ops' fences, runs the body (which only enqueues work) and completes the
// op at once, leaving the stream's event as a fence on its vars. One thread per device also means
// each stream is driven by one thread at a time, which the CUDA backend (cuBLAS handles per stream)
// relies on. An idle launcher sleeps on a condition variable.
//
// The executor also keeps the device work it launched until that work has ended
// (`outstanding_`, in launch order), so that wait_all can wait for it and no failure is lost
// when the vars it fenced are overwritten before anyone looks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "engine_core.h"
#include "stream_chooser.h"
#include "tandem/accel/accelerator.h"

namespace tandem::detail {

class AcceleratorExecutor final : public DeviceWorkTracker {
 public:
  // `synchronize_each_op`: the baseline mode, each op waits for its stream before completing.
  // `spin`: how long the launcher keeps looking for a next op (yielding its core on every
  // look) before it sleeps (EngineConfig::spin_before_park).
  AcceleratorExecutor(Accelerator& accelerator, EngineCore& engine, bool synchronize_each_op,
                      std::chrono::microseconds spin = std::chrono::microseconds{0});
  ~AcceleratorExecutor();  // call only once no op is pending; joins the launcher
  AcceleratorExecutor(const AcceleratorExecutor&) = delete;
  AcceleratorExecutor& operator=(const AcceleratorExecutor&) = delete;

  // Hands over an op whose vars are all granted.
  void submit(OpRecord* op);
  void track(DeviceWorkRef work) override;
  // The device work launched and not yet known to have ended, in launch order.
  std::vector<DeviceWorkRef> outstanding() const;
  Device device() const { return accelerator_.device(); }

 private:
  struct RunsLater {
    bool operator()(const OpRecord* a, const OpRecord* b) const {
      if (a->props.priority != b->props.priority) return a->props.priority < b->props.priority;
      return a->ready_sequence > b->ready_sequence;
    }
  };

  void run();
  // Drops the ended work at the front of `outstanding_`, resolving failures first.
  void prune();

  // The launcher prunes after every kLaunchesPerPrune launches and before it sleeps, not after
  // each launch: a prune queries the events of the work it finds ended and of the first one
  // still running, and on cuda a query is a driver call (two when the work is still running:
  // the cudaGetLastError that clears its cudaErrorNotReady). Pruning after each launch cost a
  // dependent tiny op two or three driver calls beside its launch and event record.
  static constexpr int kLaunchesPerPrune = 16;

  Accelerator& accelerator_;
  EngineCore& engine_;
  const bool synchronize_each_op_;
  const std::chrono::microseconds spin_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::priority_queue<OpRecord*, std::vector<OpRecord*>, RunsLater> ready_;  // guarded by mutex_
  std::uint64_t next_sequence_ = 0;                                          // guarded by mutex_
  bool stopping_ = false;                                                    // guarded by mutex_
  // ready_.size() (written under mutex_), read without the lock by the spinning launcher.
  std::atomic<std::size_t> queued_{0};

  mutable std::mutex outstanding_mutex_;
  std::deque<DeviceWorkRef> outstanding_;  // pushed and popped by the launcher only

  StreamChooser streams_;         // launcher only
  int launches_since_prune_ = 0;  // launcher only
  std::thread launcher_;
};

}  // namespace tandem::detail
