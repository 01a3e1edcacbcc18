#include "naive_engine.h"

#include <exception>
#include <thread>

#include "base/logging.h"
#include "profiler/profiler_recorder.h"
#include "tandem/accel/accelerator.h"
#include "wake_signal.h"

namespace tandem::detail {

void NaiveEngine::submit(OpRecord* op, Device device, VarList reads, VarList writes,
                         const OpProps& props) {
  prepare(op, device, reads, writes, props);
  run_now(op);
}

void NaiveEngine::submit_delete(OpRecord* op, Var var) {
  prepare_delete(op, var);
  run_now(op);
}

void NaiveEngine::run_now(OpRecord* op) {
  op->push_sequence = ops_pushed_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock lock(mutex_);
  if (running_ && runner_ == std::this_thread::get_id()) {
    // Pushed from inside an op this thread runs (maybe through another engine's op): it comes
    // after that op in push order, so it runs once that op (and what was deferred before it)
    // has finished.
    deferred_.push_back(op);
    return;
  }
  turn_.wait(lock, [this] { return !running_ || awaiting_completion_; });
  if (running_) {
    // The runner waits for a Completion that may come from this thread: queue, don't block.
    deferred_.push_back(op);
    return;
  }
  running_ = true;
  runner_ = std::this_thread::get_id();
  ++session_;
  for (OpRecord* next = op; next != nullptr;) {
    lock.unlock();
    run_one(next);
    lock.lock();
    next = nullptr;
    if (!deferred_.empty()) {
      next = deferred_.front();
      deferred_.pop_front();
    }
  }
  running_ = false;
  turn_.notify_all();
}

void NaiveEngine::run_one(OpRecord* op) {
  // An async op may complete on another thread after execute returns; release() sets this.
  WakeSignal finished;
  op->engine_token = &finished;
  if (profiling::profiled(op)) profiling::on_enqueue(op);
  WakeSignal::WaitingHere waiting_here(finished);
  if (op->device.is_accelerator()) {
    // The synchronous reference: launch on the op's stream and wait for it before returning.
    Accelerator& device = accelerator(op->device);
    // Launch functions run on this (the pushing) thread: the op's device must be current.
    try {
      device.bind_thread();
    } catch (const std::exception& e) {
      log().error("tandem: op '{}': could not make {} current: {}", op->props.name,
                  to_string(op->device), e.what());
    }
    launch(op, streams_.choose(device, *op), /*synchronize=*/true, nullptr);
  } else {
    execute(op, -1);
  }
  if (finished.is_set()) return;
  // An async op waiting for its Completion: let other threads' pushes queue meanwhile.
  {
    std::lock_guard lock(mutex_);
    awaiting_completion_ = true;
  }
  turn_.notify_all();
  // The push itself waits here: it has no timeout, but the watchdog reports it.
  const std::string name = op->props.name;
  const std::string device = to_string(op->device);
  wait_with_report([&](Deadline until) { return finished.wait_until(until); }, kNoDeadline,
                   config().wait_warn_after, "push (naive engine)",
                   [&] {
                     return "async op '" + name + "' on " + device +
                            " waits for its Completion to be invoked";
                   });
  std::lock_guard lock(mutex_);
  awaiting_completion_ = false;
}

template <class Condition>
void NaiveEngine::wait_for_turn(std::unique_lock<std::mutex>& lock, Condition condition,
                                Deadline deadline, const char* call) {
  wait_with_report([&](Deadline until) { return turn_.wait_until(lock, until, condition); },
                   deadline, config().wait_warn_after, call,
                   [&] {
                     // Called with the lock held: only the fields it guards are read.
                     return std::string("another thread runs ops on this engine") +
                            (awaiting_completion_
                                 ? ", and waits for an async op's Completion to be invoked"
                                 : "");
                   });
}

void NaiveEngine::release(OpRecord* op) noexcept {
  if (VarState* var = op->var_to_delete) release_var_state(var);
  auto* finished = static_cast<WakeSignal*>(op->engine_token);
  op->engine_token = nullptr;
  release_op_record(op);
  finished->set();
}

void NaiveEngine::wait(Var var, const char* call, Deadline deadline) {
  check_not_inside_op(call);
  VarState* state = checked_state(var, call);
  ErrorRef poison;
  {
    std::unique_lock lock(mutex_);
    wait_for_turn(
        lock, [this] { return !running_; }, deadline, call);
    poison = state->poison;
  }
  throw_if_poisoned(poison);
}

void NaiveEngine::wait_all(Deadline deadline) {
  check_not_inside_op("wait_all");
  {
    // Wait for the ops pushed so far, which the current runner's session (if any) runs to the
    // end; a later session runs only later pushes, so a thread that keeps pushing cannot hold
    // this wait up.
    std::unique_lock lock(mutex_);
    const std::uint64_t session = session_;
    wait_for_turn(
        lock, [&] { return !running_ || session_ != session; }, deadline, "wait_all");
  }
  throw_first_unthrown_error();
}

EngineStats NaiveEngine::stats() const {
  EngineStats stats = base_stats();
  stats.ops_completed = stats.ops_pushed;
  return stats;
}

}  // namespace tandem::detail
