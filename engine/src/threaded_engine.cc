#include "threaded_engine.h"

#include <algorithm>
#include <limits>
#include <thread>
#include <vector>

#include "base/assertions.h"
#include "base/fast_tls.h"
#include "base/logging.h"
#include "profiler/profiler_recorder.h"
#include "wake_signal.h"

namespace tandem::detail {

ThreadedEngine::ThreadedEngine(EngineConfig config)
    : EngineCore(std::move(config)),
      max_in_flight_(this->config().max_ops_in_flight),
      resume_at_(max_in_flight_ - std::max<std::uint64_t>(1, max_in_flight_ / 8)),
      room_check_interval_(
          static_cast<std::uint32_t>(std::clamp<std::uint64_t>(max_in_flight_ / 8, 1, 32))),
      cpu_(std::make_unique<CpuExecutor>(this->config(), *this)) {}

namespace {

// Submissions (pushes and delete_var) this thread made since it last checked the in-flight
// bound, and the engine they went to. Per thread, so that every thread checks every few of its
// own submissions whatever the other threads do (a shared counter lets racing threads step
// over the multiples that trigger a check, and counted delete_var without ever checking).
struct RoomCheck {
  const void* engine;
  std::uint32_t left;  // submissions to this engine before the next check
};
constinit thread_local RoomCheck tls_room_check TANDEM_FAST_TLS = {nullptr, 0};

}  // namespace

// Inline on the push path: a call here cost ~20 instructions per push (callgrind). A count
// down to zero, so that the common case reads no member of the engine.
[[gnu::always_inline]] inline bool ThreadedEngine::due_for_room_check() noexcept {
  RoomCheck& check = tls_room_check;
  // A thread that alternates between engines checks on every switch.
  if (check.engine != this || --check.left == 0) [[unlikely]] {
    check.engine = this;
    check.left = room_check_interval_;
    return true;
  }
  return false;
}

void ThreadedEngine::check_room() {
  // Never block inside an op: the ops that would make room might wait for this one. A bound of
  // 0 means none (tested here, off the push path).
  if (max_in_flight_ != 0 && current_op() == nullptr && in_flight() >= max_in_flight_)
    wait_for_room();
}

void ThreadedEngine::join_parent_epoch(OpRecord* op, const OpRecord* parent) noexcept {
  // Pushed by an op of the epoch a wait_all is draining: it is part of what that wait_all waits
  // for, so it moves to its parent's epoch (see wait_all).
  const std::uint8_t parity = op->epoch_parity;
  op->epoch_parity = parent->epoch_parity;
  parity_adjust_[parent->epoch_parity].fetch_add(1, std::memory_order_seq_cst);
  parity_adjust_[parity].fetch_sub(1, std::memory_order_seq_cst);
}

[[gnu::always_inline]] inline void ThreadedEngine::take_ticket(OpRecord* op) {
  // Backpressure. Reading `completed_` (a line the workers write) costs a cache miss, so a large
  // bound is checked every few submissions of a thread only: the bound may be overshot by up to
  // `room_check_interval_` ops per submitting thread.
  if (due_for_room_check()) [[unlikely]]
    check_room();
  const std::uint64_t ticket = ops_pushed_.fetch_add(1, std::memory_order_seq_cst);
  op->push_sequence = ticket & kSequenceMask;
  op->epoch_parity = static_cast<std::uint8_t>((ticket >> kEpochShift) & 1);
  const OpRecord* parent = current_op();
  if (parent != nullptr && parent->sink == this && parent->epoch_parity != op->epoch_parity)
      [[unlikely]] {
    join_parent_epoch(op, parent);
  }
}

void ThreadedEngine::submit(OpRecord* op, Device device, VarList reads, VarList writes,
                            const OpProps& props) {
  prepare(op, device, reads, writes, props);
  take_ticket(op);
  enqueue_on_vars(op);
}

void ThreadedEngine::submit_delete(OpRecord* op, Var var) {
  prepare_delete(op, var);
  take_ticket(op);
  enqueue_on_vars(op);
}

void ThreadedEngine::submit_prepared(OpRecord* op) {
  take_ticket(op);
  enqueue_on_vars(op);
}

void ThreadedEngine::enqueue_on_vars(OpRecord* op) {
  // One test of the profiler per push here: the profiled path does its recording on its own.
  if (profiling::profiled(op)) [[unlikely]]
    return enqueue_on_vars_profiled(op);
  if (queue_on_vars<false>(op)) {
    if (op->props.inline_when_ready && runs_inline(op)) {
      ops_run_inline_.fetch_add(1, std::memory_order_relaxed);
      return execute(op, -1);
    }
    dispatch(op);
  }
}

// A cheap op whose vars were all free at push runs on the pushing thread (OpProps): only a
// CPU op with no fence to wait for, pushed from outside any op (a nested execute would run
// inside another op's body, and its drainer's run_next_here slot). An async_completion op's
// body only hands its Completion on (execute settles it through completion_refs, as for the
// naive engine, which runs every op inline).
bool ThreadedEngine::runs_inline(const OpRecord* op) const noexcept {
  return op->device.kind == DeviceKind::cpu &&
         !op->needs_fence_sync.load(std::memory_order_relaxed) && current_op() == nullptr;
}

void ThreadedEngine::enqueue_on_vars_profiled(OpRecord* op) {
  if (queue_on_vars<true>(op)) dispatch_profiled(op);
}

template <bool kProfiled>
bool ThreadedEngine::queue_on_vars(OpRecord* op) {
  const std::uint32_t n = op->num_slots;
  // One reference per var, plus one held until every var is queued.
  op->pending_vars.store(n + 1, std::memory_order_relaxed);
  for (std::uint32_t i = 0; i < n; ++i) op->slots[i].var->lock.lock();
  std::uint32_t granted = 0;
  for (std::uint32_t i = 0; i < n; ++i) granted += op->slots[i].var->enqueue(&op->slots[i]);
  if constexpr (kProfiled) profiling::on_enqueue(op);
  for (std::uint32_t i = 0; i < n; ++i) op->slots[i].var->lock.unlock();
  // Every var granted at once: no releasing op can reach this op any more, so nobody else
  // touches `pending_vars` and the count needs no atomic update.
  TANDEM_ASSERT(granted <= n, "an op was granted more vars than it has");
  if (granted == n) return true;
  const std::uint32_t before = op->pending_vars.fetch_sub(granted + 1, std::memory_order_acq_rel);
  TANDEM_ASSERT(before >= granted + 1, "an op's pending var count went below zero");
  return before == granted + 1;
}

void ThreadedEngine::dispatch(OpRecord* op) noexcept {
  // A waiter only signals its thread: run it here rather than wake a worker for it.
  if (op->is_waiter) {
    execute(op, -1);
    return;
  }
  if (op->device.kind != DeviceKind::cpu) [[unlikely]] {
    accelerator_executor(op->device).submit(op);
    return;
  }
  // A CPU op behind device work still running waits for it off the workers (FenceWaiter).
  if (op->needs_fence_sync.load(std::memory_order_relaxed)) [[unlikely]] {
    if (handed_to_fence_waiter(op)) return;
  }
  cpu_->submit(op);
}

bool ThreadedEngine::handed_to_fence_waiter(OpRecord* op) noexcept {
  if (fences_ended(op)) return false;
  try {
    fence_waiter_.submit(op);
    return true;
  } catch (...) {
    return false;  // no memory or no thread: the worker waits in settle_fences instead
  }
}

void ThreadedEngine::dispatch_on_completion(OpRecord* op) noexcept {
  // A tail call: a call that returns here would make every dispatch save registers for it.
  if (profiling::profiled(op)) [[unlikely]]
    return dispatch_profiled(op);
  // A plain CPU op that this completion made ready runs next on this very drainer when it may
  // (see CpuExecutor::run_next_here): no queue, no wake-up, and its inputs are in this core's
  // cache. A dependency chain then stays on one worker.
  if (op->device.kind == DeviceKind::cpu && !op->is_waiter &&
      !op->needs_fence_sync.load(std::memory_order_relaxed) && cpu_->run_next_here(op)) {
    return;
  }
  dispatch(op);
}

// dispatch() for a profiled op: records its ready time first. Waiters record nothing.
void ThreadedEngine::dispatch_profiled(OpRecord* op) noexcept {
  if (!op->is_waiter) profiling::on_ready(op);
  dispatch(op);
}

AcceleratorExecutor& ThreadedEngine::accelerator_executor(Device device) {
  if (AcceleratorExecutor* executor = accel_slots_.find(device)) return *executor;
  // prepare() has checked that the device exists; accelerator() throws if it does not.
  Accelerator& target = accelerator(device);
  const int count = accelerator_count(device.kind);
  std::lock_guard lock(accel_mutex_);
  if (AcceleratorExecutor* executor = accel_slots_.find(device)) return *executor;
  accel_.push_back(std::make_unique<AcceleratorExecutor>(
      target, *this, config().accel.synchronize_each_op, config().spin_before_park));
  accel_slots_.insert(device, count, accel_.back().get());
  return *accel_.back();
}

std::vector<AcceleratorExecutor*> ThreadedEngine::accelerator_executors() {
  std::lock_guard lock(accel_mutex_);
  std::vector<AcceleratorExecutor*> all;
  for (auto& executor : accel_) all.push_back(executor.get());
  return all;
}

void ThreadedEngine::settle_device_work(std::uint64_t pushed_before, Deadline deadline) {
  std::vector<DeviceWorkRef> works;
  for (AcceleratorExecutor* executor : accelerator_executors()) {
    for (DeviceWorkRef& work : executor->outstanding()) {
      if (work->push_sequence < pushed_before) works.push_back(std::move(work));
    }
  }
  std::sort(works.begin(), works.end(), [](const DeviceWorkRef& a, const DeviceWorkRef& b) {
    return a->push_sequence < b->push_sequence;
  });
  for (const DeviceWorkRef& work : works) {
    wait_for_device_reported(*work, deadline, "wait_all");
  }
  for (const DeviceWorkRef& work : works) device_error(*work);  // records failures, oldest first
}

void ThreadedEngine::release(OpRecord* op) noexcept {
  for (std::uint32_t i = 0; i < op->num_slots; ++i) {
    VarSlot& slot = op->slots[i];
    VarState* var = slot.var;
    var->lock.lock();
    VarSlot* granted = var->release(slot.write);
    var->lock.unlock();
    while (granted != nullptr) {
      // Read the link first: once dispatched, the granted op may finish and be recycled.
      VarSlot* next = granted->next;
      OpRecord* ready = granted->op;
      const std::uint32_t before = ready->pending_vars.fetch_sub(1, std::memory_order_acq_rel);
      TANDEM_ASSERT(before >= 1, "a var was granted to an op that waited for none");
      if (before == 1) dispatch_on_completion(ready);
      granted = next;
    }
  }
  if (VarState* var = op->var_to_delete) {
    var->lock.lock();
    bool idle = var->idle();
    var->lock.unlock();
    if (idle) {
      release_var_state(var);
    } else {
      log().error("delete_var: ops were pushed on the var after its delete_var; leaking it");
    }
  }
  // Waiters are not counted in flight: wait_all and backpressure are about user ops.
  const bool counted = !op->is_waiter;
  const std::uint8_t parity = op->epoch_parity;
  release_op_record(op);
  if (!counted) return;
  const std::uint64_t done_in_parity =
      completed_[parity].fetch_add(1, std::memory_order_seq_cst) + 1;
  if (blocked_threads_.load(std::memory_order_seq_cst) > 0) [[unlikely]] {
    // Wake only when a blocked thread's condition may hold now: the epoch a wait_all drains is
    // done, nothing is left in flight (shutdown), or there is room again under the bound
    // (backpressure). Waking a waiter on every completion would make it compete for the cores
    // with the workers it waits for.
    const std::uint64_t left = in_flight();
    if (drained(parity, done_in_parity) || left == 0 ||
        (left <= resume_at_ && room_waiters_.load(std::memory_order_seq_cst) > 0)) {
      // Taking the mutex orders this notify after a waiter that checked its condition under
      // it has gone to sleep, so the wake-up cannot be lost.
      std::lock_guard lock(blocked_mutex_);
      blocked_cv_.notify_all();
    }
  }
}

void ThreadedEngine::complete(OpRecord* op) noexcept {
  // Once the completions reach the pushes, shutdown may return and the engine be destroyed
  // while release() still reads members after its `completed_` increment. Shutdown joins every
  // thread the engine owns (drainers, lanes, launchers, the fence waiter) before it returns,
  // so only an async op's completion, which may run on a thread of the program's, can still be
  // inside the engine then: `releasing_` counts those, and shutdown waits for it to drop to zero.
  // The other ops save two locked updates of a line every worker writes.
  releasing_.fetch_add(1, std::memory_order_seq_cst);
  EngineCore::complete(op);
  releasing_.fetch_sub(1, std::memory_order_release);
}

template <class Condition>
bool ThreadedEngine::block_until(Condition condition, bool for_room,
                                 std::chrono::milliseconds timeout) {
  // Counted for room before counted as blocked: a completer that sees this thread blocked then
  // also sees why (both seq_cst).
  if (for_room) room_waiters_.fetch_add(1, std::memory_order_seq_cst);
  blocked_threads_.fetch_add(1, std::memory_order_seq_cst);
  bool reached;
  {
    std::unique_lock lock(blocked_mutex_);
    reached = blocked_cv_.wait_for(lock, timeout, condition);
  }
  blocked_threads_.fetch_sub(1, std::memory_order_seq_cst);
  if (for_room) room_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  return reached;
}

bool ThreadedEngine::wait_in_flight_at_most(std::uint64_t target,
                                            std::chrono::milliseconds timeout) {
  // Completions wake blocked threads only at the targets there are (see release()).
  TANDEM_ASSERT(target == 0 || target == resume_at_,
                "a backpressure wait for a target no completion wakes");
  return block_until([&] { return in_flight() <= target; }, target != 0, timeout);
}

void ThreadedEngine::wait_for_room() {
  pushes_blocked_.fetch_add(1, std::memory_order_relaxed);
  // A thread that has invoked Completions before is likely to hold one now.
  const auto stall_period = gave_a_completion() ? kStallPeriodOfCompleter : kStallPeriod;
  for (;;) {
    const std::uint64_t completed_before = completed_total();
    if (wait_in_flight_at_most(resume_at_, stall_period)) return;
    // Nothing finished for a while and async ops wait for completions from outside the engine:
    // the ops that would make room may all wait behind such an op, whose completion may come
    // from this very thread once this push returns (an I/O thread that pushes a follow-up
    // before it completes). Blocking could then never end, so the push goes over the bound.
    if (completed_total() == completed_before &&
        completions_outstanding_.load(std::memory_order_relaxed) > 0) {
      pushes_over_bound_.fetch_add(1, std::memory_order_relaxed);
      log().debug(
          "push over max_ops_in_flight: nothing completed for {} ms while {} async ops "
          "wait for their completions",
          stall_period.count(), completions_outstanding_.load());
      return;
    }
  }
}

namespace {

// What a wait learns of its var once every op it waits for has finished. Shared with the
// waiter op, which may still run after a wait that timed out has returned.
struct VarObservation {
  WakeSignal signal;
  ErrorRef poison;
  std::vector<DeviceWorkRef> fences;
  bool write_fenced = false;  // fences.front() is the var's write fence

  // Under the var's lock.
  void observe(const VarState& state, bool for_write) {
    poison = state.poison;
    if (!state.fenced) return;
    write_fenced = state.fences->write != nullptr;
    state.fences->collect(for_write, fences);
  }
};

}  // namespace

bool ThreadedEngine::wait_for_device(const DeviceWork& work, Deadline deadline) {
  if (deadline == kNoDeadline) {
    wait_for(work);
    return true;
  }
  // Every wait of the front end gets here with a deadline (at least the watchdog's, 2 minutes
  // out), and events have no timed wait. The work behind a wait_to_read is usually a small op
  // that ends microseconds after the wait begins, and a sleep costs more than that (20 us asked
  // is 60-80 us on these VMs, the timer slack included): so look first, yielding the core, for
  // as long as a worker or the launcher looks for work before it parks (spin_before_park;
  // issue 22: a wait_to_read per tiny op on sim(0) took 105 us, not 14, whenever the work was
  // still running when the wait began). Then poll, each sleep an eighth of the time waited so
  // far (20 us to 1 ms): a wait ends at most about 1/8 + the timer slack late, and a long one
  // looks a thousand times a second.
  const auto start = std::chrono::steady_clock::now();
  const auto spin_end = std::min(start + config().spin_before_park, deadline);
  while (!work.done->query()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (now < spin_end) {
      std::this_thread::yield();
      continue;
    }
    const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(now - start);
    std::this_thread::sleep_for(std::clamp<std::chrono::microseconds>(
        waited / 8, std::chrono::microseconds(20), std::chrono::milliseconds(1)));
  }
  return true;
}

void ThreadedEngine::wait_for_device_reported(const DeviceWork& work, Deadline deadline,
                                              const char* call) {
  wait_with_report([&](Deadline until) { return wait_for_device(work, until); }, deadline,
                   config().wait_warn_after, call,
                   [&] {
                     return "the device work of op '" + work.op_name + "' on " +
                            to_string(work.device) + " has not ended";
                   });
}

void ThreadedEngine::wait_on_var(Var var, bool for_write, const char* call, Deadline deadline) {
  check_not_inside_op(call);
  VarState* state = checked_state(var, call);
  // The var's poison and the device work still fencing it, read while the var is ours: at once
  // if nothing is pending on it, else by a waiter op queued behind everything pushed on it so
  // far, which runs in the thread that grants it and wakes this one.
  auto seen = std::make_shared<VarObservation>();
  state->lock.lock();
  const bool ready = for_write ? state->idle() : state->readable();
  if (ready) seen->observe(*state, for_write);
  state->lock.unlock();
  if (!ready) {
    OpRecord* op = acquire_op_record();
    op->set_callable([seen, state, for_write] {
      state->lock.lock();  // concurrent readers may add read fences
      seen->observe(*state, for_write);
      state->lock.unlock();
      seen->signal.set();
    });
    const Var vars[1] = {var};
    prepare(op, cpu(), for_write ? VarList{} : VarList(vars), for_write ? VarList(vars) : VarList{},
            OpProps{.name = call, .no_skip = true});
    op->is_waiter = true;
    op->profile_id = 0;  // waits are not ops of the program
    enqueue_on_vars(op);
    wait_with_report([&](Deadline until) { return seen->signal.wait_until(until); }, deadline,
                     config().wait_warn_after, call,
                     [&] { return describe_var_wait(state, for_write); });
  }
  // Host-side wait for the device work; a poison is newer than every fence the var still has.
  for (const DeviceWorkRef& work : seen->fences) {
    wait_for_device_reported(*work, deadline, call);
  }
  ErrorRef poison = seen->poison;
  if (!poison && seen->write_fenced) poison = device_error(*seen->fences.front());
  throw_if_poisoned(poison);
}

void ThreadedEngine::wait_for_var(Var var, Deadline deadline) {
  wait_on_var(var, false, "wait_for_var", deadline);
}

void ThreadedEngine::wait_to_write(Var var, Deadline deadline) {
  wait_on_var(var, true, "wait_to_write", deadline);
}

bool ThreadedEngine::block_until_deadline(int parity, Deadline until) {
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return drained(parity, completed_[parity].load(std::memory_order_seq_cst));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    if (block_until(
            [&] { return drained(parity, completed_[parity].load(std::memory_order_seq_cst)); },
            /*for_room=*/false,
            std::min<std::chrono::milliseconds>(left, std::chrono::hours(1)) +
                std::chrono::milliseconds(1))) {
      return true;
    }
  }
}

std::string ThreadedEngine::describe_wait_all(int parity) {
  const std::uint64_t base = drain_target_[parity].load(std::memory_order_seq_cst);
  const std::int64_t left =
      base == kNoTarget
          ? 0
          : static_cast<std::int64_t>(base) +
                parity_adjust_[parity].load(std::memory_order_seq_cst) -
                static_cast<std::int64_t>(completed_[parity].load(std::memory_order_seq_cst));
  std::string text =
      std::to_string(std::max<std::int64_t>(left, 0)) + " op(s) pushed before it have not finished";
  const std::string pending = describe_pending_completions();
  if (!pending.empty()) text += "; " + pending;
  return text;
}

void ThreadedEngine::drain_epoch(int parity, Deadline deadline) {
  wait_with_report([&](Deadline until) { return block_until_deadline(parity, until); }, deadline,
                   config().wait_warn_after, "wait_all", [&] { return describe_wait_all(parity); },
                   [&] { return completed_[parity].load(std::memory_order_seq_cst); });
  drain_target_[parity].store(kNoTarget, std::memory_order_seq_cst);
}

void ThreadedEngine::wait_all(Deadline deadline) {
  check_not_inside_op("wait_all");
  // Waits for the ops pushed before this call, and for the ops those push (they may still be
  // running), not for a quiet engine: another thread that keeps pushing must not hold it up.
  // Each call opens a new epoch by one increment of the push tickets, so every op pushed before
  // it belongs to an older epoch, and waits until the ops of the epoch it closed have completed.
  // The epochs before that one were drained by the earlier calls, which run one at a time
  // (epoch_mutex_): so one completion count per epoch parity suffices, and no op of a newer
  // epoch counts towards the one drained here. An op pushed from inside an op of the closed
  // epoch after the increment moves to that epoch (take_ticket): `parity_adjust_` moves its
  // count from the new epoch's parity to the closed one's. A call that timed out leaves its
  // epoch undrained (`undrained_parity_`): the next call drains it before it opens another.
  std::uint64_t boundary = 0;
  {
    // One call at a time (a flag under a plain mutex rather than a timed mutex: ThreadSanitizer
    // does not see std::timed_mutex::try_lock_until's pthread_mutex_clocklock).
    {
      std::unique_lock lock(epoch_mutex_);
      const auto free = [this] { return !epoch_busy_; };
      if (deadline == kNoDeadline) {
        epoch_turn_.wait(lock, free);
      } else if (!epoch_turn_.wait_until(lock, deadline, free)) {
        throw TimeoutError(
            "tandem: wait_all timed out while another thread's wait_all was still waiting");
      }
      epoch_busy_ = true;
    }
    struct EndTurn {
      ThreadedEngine* engine;
      ~EndTurn() {
        {
          std::lock_guard lock(engine->epoch_mutex_);
          engine->epoch_busy_ = false;
        }
        engine->epoch_turn_.notify_one();
      }
    } end_turn{this};
    if (undrained_parity_ >= 0) {
      drain_epoch(undrained_parity_, deadline);
      undrained_parity_ = -1;
    }
    const std::uint64_t ticket = ops_pushed_.fetch_add(kOneEpoch, std::memory_order_seq_cst);
    boundary = ticket & kSequenceMask;
    const int parity = static_cast<int>((ticket >> kEpochShift) & 1);
    pushed_in_parity_[parity] += boundary - epoch_start_;
    epoch_start_ = boundary;
    drain_target_[parity].store(pushed_in_parity_[parity], std::memory_order_seq_cst);
    try {
      drain_epoch(parity, deadline);
    } catch (...) {
      undrained_parity_ = parity;
      throw;
    }
  }
  // Every op pushed before has completed; accelerator ops completed at launch, their work may
  // still run.
  settle_device_work(boundary, deadline);
  throw_first_unthrown_error();
}

bool ThreadedEngine::shutdown(std::chrono::milliseconds timeout) {
  if (!wait_in_flight_at_most(0, timeout)) {
    log().error("engine shutdown: {} ops still unfinished after {} ms; abandoning them",
                in_flight(), timeout.count());
    return false;
  }
  // Every op has counted itself complete; wait for the last of them to stop touching `this`.
  while (releasing_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  try {
    // Device work may still use memory that vars' owners free next.
    settle_device_work(std::numeric_limits<std::uint64_t>::max(), kNoDeadline);
  } catch (...) {
    log().error("engine shutdown: could not record a device error");
  }
  {
    std::lock_guard lock(accel_mutex_);
    accel_slots_.clear();
    accel_.clear();  // joins the launchers: nothing is pending, so they are idle
  }
  fence_waiter_.stop();  // its last hand-on may still be in cpu_->submit
  cpu_.reset();
  return true;
}

std::string ThreadedEngine::lane_name(int worker) const {
  const int pool = cpu_ ? cpu_->num_workers() : 0;
  if (worker < 0) return "inline";
  if (worker < pool) return "cpu worker " + std::to_string(worker);
  return "cpu priority " + std::to_string(worker - pool);
}

EngineStats ThreadedEngine::stats() const {
  EngineStats stats = base_stats();
  stats.ops_completed = completed_total();
  stats.ops_in_flight = stats.ops_pushed - std::min(stats.ops_pushed, stats.ops_completed);
  stats.pushes_blocked = pushes_blocked_.load(std::memory_order_relaxed);
  stats.pushes_over_bound = pushes_over_bound_.load(std::memory_order_relaxed);
  stats.ops_run_inline = ops_run_inline_.load(std::memory_order_relaxed);
  if (cpu_) cpu_->add_stats(stats);
  return stats;
}

}  // namespace tandem::detail
