// CpuExecutor: where ready CPU ops run.
//
// - The worker pool is a oneTBB arena, so that an op's own parallel_for (intra-op parallelism)
//   uses the same threads as inter-op parallelism and the two never oversubscribe the cores.
//   One TBB task per op would cost ~250 ns (docs/toolchain.md), so a TBB task is a *drainer*:
//   it runs ready ops from our own queues until they stay empty for `spin_before_park`, then
//   returns, and TBB parks the thread. At most `cpu_workers` drainers exist at once, and at
//   most one of them spins while idle; another idle one yields its core a few times and parks,
//   and a push wakes a drainer only when none is idle (see `idle_drainers`).
// - Compute ops with priority > 0 go to the urgent queue, which every drainer checks first and
//   which the priority lanes' own threads serve, so such an op never waits behind long compute
//   ops. Ops with priority < 0 run when nothing else is ready.
// - Ops on a copy or comm queue go to the copy queue. They are the priority lanes' work: a
//   drainer takes one only while no lane is idle (`idle_lanes_`), so a copy never occupies a
//   worker that compute ops need while its own lane could run it, and never waits while a
//   worker is idle and every lane is busy.
// - A drainer that finished an op runs the compute op that completion made ready next
//   (run_next_here). That op is invisible to the other workers, so nothing may hold it up:
//   copies wait for a lane (or for this drainer's next poll), and when an urgent op goes first
//   the successor is put back on the shared FIFO, where an idle worker takes it.
#pragma once

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "ready_fifo.h"
#include "ready_queue.h"
#include "tandem/engine.h"
#include "tandem/engine_config.h"

namespace tandem::detail {

// The most pauses an idle drainer makes between two polls (CpuExecutor::max_idle_pauses_):
// TANDEM_IDLE_POLL_PAUSES, read by engine_config.cc with the engine's other settings; a tuning
// knob for measurements, not part of EngineConfig. 4 (up to ~0.4 us between polls on the
// development VM, where a pause takes ~100 ns): against 1, fewer rounds in the slow mode while
// the machine was disturbed and equal medians and METG while it was quiet (docs/benchmarks.md).
inline constexpr unsigned kDefaultMaxIdlePollPauses = 4;
unsigned max_idle_poll_pauses();

// The pauses a spinning drainer waits before its first poll of an idle streak once it is
// caught up in a stream (CpuExecutor::stream_gap_pauses_): TANDEM_STREAM_GAP_PAUSES, read like
// TANDEM_IDLE_POLL_PAUSES; 0 turns the gap off. 64 (~6 us on the development VM, where a pause
// takes ~100 ns): the pusher fills a batch alone instead of handing over op by op
// (docs/benchmarks.md, "Fourth pass").
inline constexpr unsigned kDefaultStreamGapPauses = 64;
unsigned stream_gap_pauses();

class EngineCore;

class CpuExecutor {
 public:
  CpuExecutor(const EngineConfig& config, EngineCore& engine);
  ~CpuExecutor();  // call only once no op is pending
  CpuExecutor(const CpuExecutor&) = delete;
  CpuExecutor& operator=(const CpuExecutor&) = delete;

  // Hands over an op whose vars are all granted.
  void submit(OpRecord* op) noexcept;
  // Called when a finishing op has made `op` (a CPU op whose vars are all granted) ready.
  // Returns true when the calling thread is one of this executor's drainers with nothing
  // lined up, `op` is a plain compute op (priority 0) and no older ready op of that class
  // waits: the drainer then runs `op` as its next op, bypassing the queues (FIFO among equals
  // holds: nothing was waiting ahead of it; urgent ops still go first). Otherwise false, and
  // the caller submits as usual.
  bool run_next_here(OpRecord* op) noexcept;
  int num_workers() const { return num_workers_; }
  // The arena's workers that can run: num_workers(), or fewer when a tbb::global_control of the
  // process caps oneTBB's threads (the smallest live cap wins; it counts one non-worker thread).
  int running_workers() const;
  int num_priority_lanes() const { return static_cast<int>(priority_threads_.size()); }
  // Adds the workers' counters (EngineStats::worker_wakes and the rest) to `stats`. A drainer
  // adds its own when it parks, so a spinning drainer's polls show once it has parked.
  void add_stats(EngineStats& stats) const;

 private:
  class DrainTask;
  struct DrainerContext;
  friend struct WakeProbe;  // test builds only (wake_points.h)
  static thread_local DrainerContext* tls_drainer;
  OpRecord* next_op(DrainerContext& context) noexcept;
  // Adds the counts `context` gathered to the counters of arena slot `worker`, and resets them.
  void publish_counters(DrainerContext& context, int worker) noexcept;
  OpRecord* pop_any() noexcept;
  // A drainer may take copies only while no priority lane is idle to take them.
  bool drainers_take_copies() const noexcept {
    return idle_lanes_.load(std::memory_order_relaxed) == 0;
  }
  // For a priority lane: an urgent op, else a copy.
  OpRecord* pop_lane_op() noexcept;
  // submit() for a copy or an op with a priority.
  [[gnu::noinline]] void submit_to_priority_queue(OpRecord* op) noexcept;
  void wake_lane() noexcept;
  void wake_drainer() noexcept;
  // `enqueued_ns`: when wake_drainer enqueued the drainer's task (steady clock).
  void drain(std::int64_t enqueued_ns) noexcept;
  void priority_lane(int index) noexcept;

  EngineCore& engine_;
  const int num_workers_;
  const std::chrono::microseconds spin_;
  // The most `pause`s an idle spinning drainer makes between two polls of the queues. Its
  // pauses double from one per poll up to this many over an idle streak, so that it stops
  // reading the FIFO's tail line, which every push writes, at the pusher's rate (see drain()).
  const unsigned max_idle_pauses_;
  // A drainer that keeps catching up with a pusher (kStreamRefills idle streaks in a row, each
  // ended by an op within kQuickRefillPolls polls) is in a stream of ops pushed one by one as
  // fast as it runs them: each op then crosses between the cores on its own, lines of the
  // record, the var and the FIFO's tail moving back and forth per op (the slow mode of
  // docs/benchmarks.md, "Two modes of a run"). Such a drainer waits this many pauses before
  // the first poll of its next idle streak, so that the pusher queues a batch meanwhile and
  // the drainer runs it from its lines in one go. A drainer waiting for a lone op, or for the
  // next op of a thread that waits for each one, does not see quick refills and polls as before.
  const unsigned stream_gap_pauses_;
  static constexpr unsigned kQuickRefillPolls = 2;
  static constexpr unsigned kStreamRefills = 4;
  tbb::task_arena arena_;

  ReadyFifo normal_;
  PriorityReadyQueue urgent_;      // compute ops with priority > 0
  PriorityReadyQueue copies_;      // ops on a copy or comm queue, any priority
  PriorityReadyQueue background_;  // compute ops with priority < 0

  // Drainers that are looking for ops; bounded by num_workers_.
  std::atomic<int> active_drainers_{0};
  // Drainer tasks not yet returned (the destructor waits for zero).
  std::atomic<int> live_drainers_{0};
  // Counters (see add_stats), in the line wake_drainer writes anyway.
  std::atomic<std::uint64_t> drainer_wakes_{0};
  std::atomic<std::uint64_t> drainer_parks_{0};
  // Drainers that started more than kLateStartNs after their enqueue (EngineStats::
  // worker_late_starts). A woken drainer counts as active from its enqueue, so while it waits
  // for a thread no push wakes another one: one worker runs every op meanwhile (on the
  // development VM the kernel sometimes placed the woken TBB worker on the busy drainer's CPU
  // for milliseconds; docs/benchmarks.md, "Fifth pass"). A wake-up takes ~14 us there, and up
  // to a few hundred when the virtual CPU itself was halted: 1 ms is well past both.
  std::atomic<std::uint64_t> late_starts_{0};
  static constexpr std::int64_t kLateStartNs = 1'000'000;
  // A drainer counts its polls and next-here runs in its own context and publishes them in its
  // arena slot's line (one writer at a time: a slot's thread) whenever it stops polling.
  struct alignas(64) SlotCounters {
    std::atomic<std::uint64_t> idle_polls{0};
    std::atomic<std::uint64_t> ran_next_here{0};
    std::atomic<std::uint64_t> yields{0};
  };
  // Drainers in an idle streak (looking for ops and finding none). The first of them spins on
  // the queues; any other yields its core on each of kExtraDrainerPolls polls and then parks.
  // submit() wakes a drainer only when none is idle: an idle one takes the op within a poll.
  // So a stream of small ops keeps one poller beside the pusher, and a second worker joins
  // only when an op finds every awake drainer busy. On 2 cores, idle drainers that kept
  // polling (and yielding) beside the pusher for spin_before_park after every op they found
  // competed with it for the cores (docs/benchmarks.md, "Two modes of a run").
  // The count lives in the FIFO's tail line, which a push exchanges anyway (ReadyFifo::
  // idle_consumers): an idle drainer writes it once per idle streak, and a push reads it.
  static constexpr unsigned kExtraDrainerPolls = 8;
  // The spinning drainer checks its clock, and yields, every this many pauses.
  static constexpr unsigned kPausesPerClockCheck = 64;
  std::atomic<int>& idle_drainers() noexcept { return normal_.idle_consumers(); }
  std::unique_ptr<SlotCounters[]> slot_counters_;

  // Priority lanes waiting for an op (spinning or parked). Each has been notified of every
  // urgent op and copy queued since it last looked, so it takes them promptly.
  alignas(64) std::atomic<int> idle_lanes_{0};
  std::atomic<std::uint32_t> urgent_epoch_{0};  // bumped (and notified) per urgent op or copy
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> priority_threads_;
};

}  // namespace tandem::detail
