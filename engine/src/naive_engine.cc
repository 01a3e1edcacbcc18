#include "naive_engine.h"

#include "logging.h"
#include "profiler_recorder.h"
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
  std::lock_guard lock(mutex_);
  const OpRecord* running = current_op();
  if (running != nullptr && running->sink == this) {
    // Pushed from inside one of this engine's ops: it comes after that op in push order, so it
    // runs once that op (and what was deferred before it) has finished.
    deferred_.push_back(op);
    return;
  }
  run_one(op);
  while (!deferred_.empty()) {
    OpRecord* next = deferred_.front();
    deferred_.pop_front();
    run_one(next);
  }
}

void NaiveEngine::run_one(OpRecord* op) {
  // An async op may complete on another thread after execute returns; release() sets this.
  WakeSignal finished;
  op->engine_token = &finished;
  if (profiling::profiled(op)) profiling::on_enqueue(op);
  if (op->device.is_accelerator()) {
    // The synchronous reference: launch on the op's stream and wait for it before returning.
    Accelerator& device = accelerator(op->device);
    const int index = op->props.queue == Queue::compute ? next_compute_stream_++ : 0;
    if (next_compute_stream_ >= device.compute_streams()) next_compute_stream_ = 0;
    launch(op, device.stream(op->props.queue, index), /*synchronize=*/true, nullptr);
  } else {
    execute(op, -1);
  }
  finished.wait();
}

void NaiveEngine::release(OpRecord* op) noexcept {
  if (VarState* var = op->var_to_delete) release_var_state(var);
  auto* finished = static_cast<WakeSignal*>(op->engine_token);
  op->engine_token = nullptr;
  release_op_record(op);
  finished->set();
}

void NaiveEngine::wait(Var var, const char* call) {
  check_not_inside_op(call);
  VarState* state = checked_state(var, call);
  ErrorRef poison;
  {
    std::lock_guard lock(mutex_);
    poison = state->poison;
  }
  throw_if_poisoned(poison);
}

void NaiveEngine::wait_all() {
  check_not_inside_op("wait_all");
  { std::lock_guard lock(mutex_); }  // let a push running on another thread finish
  throw_first_unthrown_error();
}

EngineStats NaiveEngine::stats() const {
  EngineStats stats = base_stats();
  stats.ops_completed = stats.ops_pushed;
  return stats;
}

}  // namespace tandem::detail
