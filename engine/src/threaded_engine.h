// ThreadedEngine: the real engine.
//
// Push takes the locks of the op's vars in address order (so two pushes can never order a pair
// of vars in opposite ways), queues one slot per var, and releases them. Each granted var drops
// `pending_vars` by one; the thread that drops it to zero hands the op to its device's executor.
// When an op finishes, each of its vars grants the next write, or every read up to the next
// write, and those ops lose one pending var. No lock is global. Ops in flight are counted as
// pushed (`ops_pushed_`, written by pushing threads) minus completed (`completed_`, written by
// workers), each on its own cache line so that neither side's counter bounces on every op.
// Completions are counted per wait_all epoch parity (see wait_all), which costs nothing extra:
// the push ticket carries the epoch, and a completion increments one of two counters.
//
// A completion notifies blocked threads only when one is blocked and its condition may hold:
// the epoch a wait_all drains has completed, nothing is left in flight (shutdown), or the count
// is at or under the resume threshold while a push waits for room (backpressure). Lost wake-ups
// are ruled out by seq_cst on both sides: a waiter publishes its condition (`drain_target_`,
// `room_waiters_`) and counts itself in `blocked_threads_`, then reads the counters; a
// completer bumps `completed_` and then reads them.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "accel_executor.h"
#include "base/device_table.h"
#include "cpu_executor.h"
#include "engine_core.h"
#include "fence_waiter.h"

namespace tandem::detail {

class ThreadedEngine final : public EngineCore {
 public:
  explicit ThreadedEngine(EngineConfig config);
  ~ThreadedEngine() override = default;

  void submit(OpRecord* op, Device device, VarList reads, VarList writes,
              const OpProps& props) override;
  void submit_delete(OpRecord* op, Var var) override;
  void submit_prepared(OpRecord* op) override;
  // Waits for every op pushed before the call (not for ops other threads push meanwhile).
  void wait_for_var(Var var, Deadline deadline) override;
  void wait_to_write(Var var, Deadline deadline) override;
  void wait_all(Deadline deadline) override;
  EngineStats stats() const override;
  bool shutdown(std::chrono::milliseconds timeout) override;

 private:
  void release(OpRecord* op) noexcept override;
  // EngineCore::complete, counted in `releasing_` (an async op may complete on any thread).
  void complete(OpRecord* op) noexcept override;
  std::string lane_name(int worker) const override;
  // Not to be called during shutdown (cpu_ is reset there); the facade never does.
  int cpu_workers() const override { return cpu_ ? cpu_->running_workers() : 0; }
  int priority_workers() const override { return cpu_ ? cpu_->num_priority_lanes() : 0; }
  int worker_lanes() const override {
    return cpu_ ? cpu_->num_workers() + cpu_->num_priority_lanes() : 0;
  }
  // The executor of accelerator `device`, created on first use.
  AcceleratorExecutor& accelerator_executor(Device device);
  std::vector<AcceleratorExecutor*> accelerator_executors();
  // Waits for the device work of the ops pushed before `pushed_before` (a push sequence) and
  // resolves its failures (wait_all, shutdown).
  void settle_device_work(std::uint64_t pushed_before, Deadline deadline);
  // Waits for `work` to end; false if `deadline` passed first.
  bool wait_for_device(const DeviceWork& work, Deadline deadline);
  // The same with the wait report of `call` (warning, TimeoutError).
  void wait_for_device_reported(const DeviceWork& work, Deadline deadline, const char* call);
  // wait_all's drain of the epoch of parity `parity` (see wait_all), and its report.
  void drain_epoch(int parity, Deadline deadline);
  bool block_until_deadline(int parity, Deadline until);
  std::string describe_wait_all(int parity);
  // Backpressure, then the op's push ticket (push sequence and wait_all epoch).
  void take_ticket(OpRecord* op);
  // Blocks while the bound is reached (not inside an op).
  [[gnu::noinline]] void check_room();
  [[gnu::cold, gnu::noinline]] void join_parent_epoch(OpRecord* op,
                                                      const OpRecord* parent) noexcept;
  // True on every `room_check_interval_`-th submission of the calling thread.
  bool due_for_room_check() noexcept;
  void enqueue_on_vars(OpRecord* op);
  [[gnu::cold, gnu::noinline]] void enqueue_on_vars_profiled(OpRecord* op);
  // Queues `op` on each of its vars (under their locks, taken in address order); true when
  // every var is granted, i.e. the op is ready now and the caller dispatches it.
  template <bool kProfiled>
  bool queue_on_vars(OpRecord* op);
  void dispatch(OpRecord* op) noexcept;
  // Whether a ready op that asked for it (OpProps::inline_when_ready) may run on this thread.
  bool runs_inline(const OpRecord* op) const noexcept;
  // Out of line, so that the common dispatch stays a tail call without an exception frame
  // (callgrind, `independent`: dispatch 22.5 -> 18.8 instructions per op).
  [[gnu::cold, gnu::noinline]] bool handed_to_fence_waiter(OpRecord* op) noexcept;
  // dispatch() for an op that a finishing op made ready.
  void dispatch_on_completion(OpRecord* op) noexcept;
  [[gnu::cold, gnu::noinline]] void dispatch_profiled(OpRecord* op) noexcept;
  void wait_on_var(Var var, bool for_write, const char* call, Deadline deadline);
  void wait_for_room();
  // Blocks until `condition()` holds (checked under blocked_mutex_, re-checked on every wake-up
  // of release()); false if `timeout` passed first.
  template <class Condition>
  bool block_until(Condition condition, bool for_room, std::chrono::milliseconds timeout);
  // Blocks until `in_flight() <= target`; false if `timeout` passed first.
  bool wait_in_flight_at_most(std::uint64_t target, std::chrono::milliseconds timeout);

  // A push blocked by the bound while async ops wait for their completions goes over the bound
  // when nothing completed for this long (see wait_for_room); sooner on a thread that has
  // invoked Completions before.
  static constexpr std::chrono::milliseconds kStallPeriod{250};
  static constexpr std::chrono::milliseconds kStallPeriodOfCompleter{20};
  static constexpr std::uint64_t kNoTarget = ~std::uint64_t{0};

  const std::uint64_t max_in_flight_;
  const std::uint64_t resume_at_;            // a blocked push resumes at or below this many ops
  const std::uint32_t room_check_interval_;  // a thread checks the bound every this many pushes
  std::uint64_t completed_total() const {
    return completed_[0].load(std::memory_order_seq_cst) +
           completed_[1].load(std::memory_order_seq_cst);
  }
  std::uint64_t in_flight() const {
    // Completions first: every op completed was pushed before, so this never underflows.
    const std::uint64_t done = completed_total();
    return pushed_count() - done;
  }
  // Completed ops by the parity of their wait_all epoch.
  alignas(64) std::atomic<std::uint64_t> completed_[2] = {0, 0};
  // Threads blocked in wait_all, backpressure or shutdown; completions notify only if any.
  alignas(64) std::atomic<int> blocked_threads_{0};
  std::atomic<int> room_waiters_{0};  // of those, pushes blocked by backpressure
  // Async ops' completions in progress (the only completions that may run on a thread shutdown
  // does not join; see complete()).
  std::atomic<int> releasing_{0};
  std::atomic<std::uint64_t> pushes_blocked_{0};
  std::atomic<std::uint64_t> pushes_over_bound_{0};
  std::atomic<std::uint64_t> ops_run_inline_{0};  // EngineStats::ops_run_inline
  // The completion count a wait_all waits for, per epoch parity (kNoTarget: none), before
  // `parity_adjust_`: ops pushed from inside an op of an older epoch count in that epoch.
  std::atomic<std::uint64_t> drain_target_[2] = {kNoTarget, kNoTarget};
  std::atomic<std::int64_t> parity_adjust_[2] = {0, 0};
  // True when `completed` ops of epoch parity `parity` are all a waiting wait_all waits for.
  bool drained(int parity, std::uint64_t completed) const {
    const std::uint64_t base = drain_target_[parity].load(std::memory_order_seq_cst);
    if (base == kNoTarget) return false;
    const std::int64_t adjust = parity_adjust_[parity].load(std::memory_order_seq_cst);
    return static_cast<std::int64_t>(completed - base) >= adjust;
  }
  // wait_all's epochs: one call at a time opens and drains one; the call that has the turn
  // (epoch_busy_, under epoch_mutex_) owns the three fields below.
  std::mutex epoch_mutex_;
  std::condition_variable epoch_turn_;
  bool epoch_busy_ = false;
  int undrained_parity_ = -1;                   // an epoch whose wait_all timed out (-1: none)
  std::uint64_t pushed_in_parity_[2] = {0, 0};  // ops pushed in the epochs of each parity
  std::uint64_t epoch_start_ = 0;               // push sequence at which the open epoch began
  std::mutex blocked_mutex_;
  std::condition_variable blocked_cv_;
  std::unique_ptr<CpuExecutor> cpu_;
  // CPU ops whose device fences have not ended wait here, not on a worker. After cpu_: it
  // hands ops to cpu_, so it is destroyed first.
  FenceWaiter fence_waiter_{*this, *cpu_};

  // Accelerator executors by (kind, id); a slot is set once under accel_mutex_.
  DeviceTable<AcceleratorExecutor> accel_slots_;
  std::mutex accel_mutex_;
  std::vector<std::unique_ptr<AcceleratorExecutor>> accel_;  // guarded by accel_mutex_
};

}  // namespace tandem::detail
