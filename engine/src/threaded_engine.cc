#include "threaded_engine.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <thread>
#include <vector>

#include "logging.h"
#include "profiler_recorder.h"
#include "wake_signal.h"

namespace tandem::detail {

ThreadedEngine::ThreadedEngine(EngineConfig config)
    : EngineCore(std::move(config)),
      max_in_flight_(this->config().max_ops_in_flight),
      resume_at_(max_in_flight_ - std::max<std::uint64_t>(1, max_in_flight_ / 8)),
      room_check_mask_(std::bit_floor(std::clamp<std::uint64_t>(max_in_flight_ / 8, 1, 32)) - 1),
      cpu_(std::make_unique<CpuExecutor>(this->config(), *this)) {}

void ThreadedEngine::submit(OpRecord* op, Device device, VarList reads, VarList writes,
                            const OpProps& props) {
  prepare(op, device, reads, writes, props);
  // Backpressure. Reading `completed_` (a line the workers write) costs a cache miss, so a large
  // bound is checked every few pushes only (it may be overshot by up to 31 ops per pushing
  // thread). Never block inside an op: the ops that would make room might wait for this one.
  const std::uint64_t pushed = ops_pushed_.load(std::memory_order_relaxed);
  if (max_in_flight_ != 0 && (pushed & room_check_mask_) == 0 &&
      pushed - completed_.load(std::memory_order_relaxed) >= max_in_flight_ &&
      current_op() == nullptr) {
    wait_for_room();
  }
  op->push_sequence = ops_pushed_.fetch_add(1, std::memory_order_seq_cst);
  enqueue_on_vars(op);
}

void ThreadedEngine::submit_delete(OpRecord* op, Var var) {
  prepare_delete(op, var);
  op->push_sequence = ops_pushed_.fetch_add(1, std::memory_order_seq_cst);
  enqueue_on_vars(op);
}

void ThreadedEngine::enqueue_on_vars(OpRecord* op) {
  // One test of the profiler per push here: the profiled path does its recording on its own.
  if (profiling::profiled(op)) [[unlikely]]
    return enqueue_on_vars_profiled(op);
  if (queue_on_vars<false>(op)) dispatch(op);
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
  return granted == n ||
         op->pending_vars.fetch_sub(granted + 1, std::memory_order_acq_rel) == granted + 1;
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
  cpu_->submit(op);
}

void ThreadedEngine::dispatch_on_completion(OpRecord* op) noexcept {
  // A tail call: a call that returns here would make every dispatch save registers for it.
  if (profiling::profiled(op)) [[unlikely]]
    return dispatch_profiled(op);
  // A plain CPU op that this completion made ready runs next on this very drainer when it may
  // (see CpuExecutor::run_next_here): no queue, no wake-up, and its inputs are in this core's
  // cache. A dependency chain then stays on one worker.
  if (op->device.kind == DeviceKind::cpu && !op->is_waiter && cpu_->run_next_here(op)) return;
  dispatch(op);
}

// dispatch() for a profiled op: records its ready time first. Waiters record nothing.
void ThreadedEngine::dispatch_profiled(OpRecord* op) noexcept {
  if (!op->is_waiter) profiling::on_ready(op);
  dispatch(op);
}

AcceleratorExecutor& ThreadedEngine::accelerator_executor(Device device) {
  // prepare() has checked that the device exists, so its id is in range.
  const std::size_t index = (device.kind == DeviceKind::cuda ? 0 : kMaxAcceleratorsPerKind) +
                            static_cast<std::size_t>(device.id);
  if (AcceleratorExecutor* executor = accel_slots_[index].load(std::memory_order_acquire)) {
    return *executor;
  }
  std::lock_guard lock(accel_mutex_);
  if (AcceleratorExecutor* executor = accel_slots_[index].load(std::memory_order_relaxed)) {
    return *executor;
  }
  accel_.push_back(std::make_unique<AcceleratorExecutor>(accelerator(device), *this,
                                                         config().accel.synchronize_each_op));
  accel_slots_[index].store(accel_.back().get(), std::memory_order_release);
  return *accel_.back();
}

std::vector<AcceleratorExecutor*> ThreadedEngine::accelerator_executors() {
  std::lock_guard lock(accel_mutex_);
  std::vector<AcceleratorExecutor*> all;
  for (auto& executor : accel_) all.push_back(executor.get());
  return all;
}

void ThreadedEngine::settle_device_work() {
  std::vector<DeviceWorkRef> works;
  for (AcceleratorExecutor* executor : accelerator_executors()) {
    auto outstanding = executor->outstanding();
    works.insert(works.end(), outstanding.begin(), outstanding.end());
  }
  std::sort(works.begin(), works.end(), [](const DeviceWorkRef& a, const DeviceWorkRef& b) {
    return a->push_sequence < b->push_sequence;
  });
  for (const DeviceWorkRef& work : works) wait_for(*work);
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
      if (ready->pending_vars.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        dispatch_on_completion(ready);
      }
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
  release_op_record(op);
  if (!counted) return;
  // Once `completed_` reaches `ops_pushed_`, shutdown may return and the engine be destroyed
  // while this thread (an async completion on a foreign thread) still reads its members below.
  // `releasing_` keeps shutdown from returning until every such tail has left the engine.
  releasing_.fetch_add(1, std::memory_order_seq_cst);
  const std::uint64_t done = completed_.fetch_add(1, std::memory_order_seq_cst) + 1;
  if (blocked_threads_.load(std::memory_order_seq_cst) > 0) [[unlikely]] {
    // Wake only when a blocked thread's condition may hold now: every op done (wait_all,
    // shutdown), or room again under the bound (backpressure). Waking a wait_all on every
    // completion would make it compete for the cores with the workers it waits for.
    const std::uint64_t left = ops_pushed_.load(std::memory_order_seq_cst) - done;
    if (left == 0 || (left <= resume_at_ && room_waiters_.load(std::memory_order_seq_cst) > 0)) {
      // Taking the mutex orders this notify after a waiter that checked the count under it has
      // gone to sleep, so the wake-up cannot be lost.
      std::lock_guard lock(blocked_mutex_);
      blocked_cv_.notify_all();
    }
  }
  releasing_.fetch_sub(1, std::memory_order_release);
}

bool ThreadedEngine::wait_in_flight_at_most(std::uint64_t target,
                                            std::chrono::milliseconds timeout) {
  // Completions wake blocked threads only at the two targets there are (see release()).
  assert(target == 0 || target == resume_at_);
  const bool for_room = target != 0;
  // Counted for room before counted as blocked: a completer that sees this thread blocked then
  // also sees why (both seq_cst).
  if (for_room) room_waiters_.fetch_add(1, std::memory_order_seq_cst);
  blocked_threads_.fetch_add(1, std::memory_order_seq_cst);
  bool reached;
  {
    std::unique_lock lock(blocked_mutex_);
    reached = blocked_cv_.wait_for(lock, timeout, [&] { return in_flight() <= target; });
  }
  blocked_threads_.fetch_sub(1, std::memory_order_seq_cst);
  if (for_room) room_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  return reached;
}

void ThreadedEngine::wait_for_room() {
  pushes_blocked_.fetch_add(1, std::memory_order_relaxed);
  while (!wait_in_flight_at_most(resume_at_, std::chrono::hours(1))) {
  }
}

void ThreadedEngine::wait_on_var(Var var, bool for_write, const char* call) {
  check_not_inside_op(call);
  VarState* state = checked_state(var, call);
  // The var's poison and the device work still fencing it, read while the var is ours: at once
  // if nothing is pending on it, else by a waiter op queued behind everything pushed on it so
  // far, which runs in the thread that grants it and wakes this one.
  ErrorRef poison;
  std::vector<DeviceWorkRef> fences;
  bool write_fenced = false;  // fences.front() is the var's write fence
  auto observe = [&] {
    poison = state->poison;
    if (!state->fenced) return;
    write_fenced = state->fences->write != nullptr;
    state->fences->collect(for_write, fences);
  };
  state->lock.lock();
  const bool ready = for_write ? state->idle() : state->readable();
  if (ready) observe();
  state->lock.unlock();
  if (!ready) {
    WakeSignal signal;
    OpRecord* op = acquire_op_record();
    op->set_callable([&signal, &observe, state] {
      state->lock.lock();  // concurrent readers may add read fences
      observe();
      state->lock.unlock();
      signal.set();
    });
    const Var vars[1] = {var};
    prepare(op, cpu(), for_write ? VarList{} : VarList(vars), for_write ? VarList(vars) : VarList{},
            OpProps{.name = call, .no_skip = true});
    op->is_waiter = true;
    op->profile_id = 0;  // waits are not ops of the program
    enqueue_on_vars(op);
    signal.wait();
  }
  // Host-side wait for the device work; a poison is newer than every fence the var still has.
  for (const DeviceWorkRef& work : fences) wait_for(*work);
  if (!poison && write_fenced) poison = device_error(*fences.front());
  throw_if_poisoned(poison);
}

void ThreadedEngine::wait_for_var(Var var) {
  wait_on_var(var, false, "wait_for_var");
}

void ThreadedEngine::wait_to_write(Var var) {
  wait_on_var(var, true, "wait_to_write");
}

void ThreadedEngine::wait_all() {
  check_not_inside_op("wait_all");
  while (!wait_in_flight_at_most(0, std::chrono::hours(1))) {
  }
  // Every op has completed; accelerator ops completed at launch, their work may still run.
  settle_device_work();
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
    settle_device_work();  // device work may still use memory that vars' owners free next
  } catch (...) {
    log().error("engine shutdown: could not record a device error");
  }
  {
    std::lock_guard lock(accel_mutex_);
    for (auto& slot : accel_slots_) slot.store(nullptr, std::memory_order_relaxed);
    accel_.clear();  // joins the launchers: nothing is pending, so they are idle
  }
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
  stats.ops_completed = completed_.load(std::memory_order_seq_cst);
  stats.ops_in_flight = stats.ops_pushed - std::min(stats.ops_pushed, stats.ops_completed);
  stats.pushes_blocked = pushes_blocked_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace tandem::detail
