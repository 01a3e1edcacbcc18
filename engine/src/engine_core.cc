#include "engine_core.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#include "base/fast_tls.h"
#include "base/logging.h"
#include "profiler/profiler_recorder.h"
#include "tandem/accel/accelerator.h"
#include "tandem/inside_op.h"

namespace tandem::detail {

namespace {

const ErrorRef kNoError;  // the outcome of an op that succeeded

std::string describe(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception (not derived from std::exception)";
  }
}

}  // namespace

std::exception_ptr wrap_op_error(const std::string& op_name, Device device,
                                 std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (...) {
    return std::make_exception_ptr(
        OpError(op_name, to_string(device), describe(std::current_exception())));
  }
}

namespace {

std::string describe_var(Var var) {
  char address[32];
  std::snprintf(address, sizeof address, "%p", static_cast<void*>(var.state()));
  return std::string("var ") + address + " (generation " + std::to_string(var.generation()) + ")";
}

// A live handle of this engine: its generation is its state's and its state is this engine's.
// Two relaxed loads and two compares on the push path (see var_state.h for why this is safe on
// a stale handle).
bool is_live_var_of(Var var, const VarOwner* owner) {
  const VarState* state = var.state();
  return state->generation.load(std::memory_order_relaxed) == var.generation() &&
         state->owner.load(std::memory_order_relaxed) == owner;
}

// What is wrong with `var` in `where` ("push of op 'x': its read set, at position 2"), as a
// tandem::Error: invalid, deleted, or another engine's.
[[noreturn, gnu::cold, gnu::noinline]] void throw_unusable_var(Var var, const std::string& where,
                                                               const VarOwner* owner,
                                                               bool deleting) {
  if (!var.valid()) {
    throw Error("tandem: " + where +
                ": an invalid (default-constructed) var; create vars with Engine::new_var()");
  }
  const VarState* state = var.state();
  const std::uint32_t now = state->generation.load(std::memory_order_relaxed);
  if (now != var.generation()) {
    throw Error("tandem: " + where + ": " + describe_var(var) +
                (deleting ? " was already deleted: delete each var once"
                          : " was deleted by delete_var (its state is at generation " +
                                std::to_string(now) +
                                " now); a var must not be used after delete_var: delete it "
                                "only after its last push and wait"));
  }
  const VarOwner* other = state->owner.load(std::memory_order_relaxed);
  throw Error("tandem: " + where + ": " + describe_var(var) + " belongs to engine #" +
              std::to_string(other != nullptr ? other->engine_number : 0) +
              ", not to this one (engine #" + std::to_string(owner->engine_number) +
              "); use a var only with the engine whose new_var created it");
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_bad_slot_var(Var var, const char* set,
                                                               std::size_t index,
                                                               const OpProps& props,
                                                               const VarOwner* owner) {
  throw_unusable_var(var,
                     "push of op '" + std::string(props.name) + "': its " + set +
                         " set, at position " + std::to_string(index),
                     owner, false);
}

// Invariant after this: op->slots[0..num_slots) name distinct live vars of `owner`'s engine,
// sorted by address, so that taking their locks in order can never deadlock two pushes.
void fill_slots(OpRecord* op, VarList reads, VarList writes, const OpProps& props,
                const VarOwner* owner) {
  const std::size_t capacity = reads.size() + writes.size();
  // One var, the most common push: nothing to deduplicate or sort (callgrind, `independent`:
  // prepare 98 -> 84 instructions per op).
  if (capacity == 1) [[likely]] {
    const bool write = !writes.empty();
    const Var var = write ? *writes.begin() : *reads.begin();
    if (!var.valid() || !is_live_var_of(var, owner)) [[unlikely]]
      throw_bad_slot_var(var, write ? "write" : "read", 0, props, owner);
    // On line 3 beside a small callable: a one-var push writes three lines of the record.
    op->slots = &op->first_slot;
    op->first_slot = VarSlot{var.state(), nullptr, op, write, !write, false};
    op->num_slots = 1;
    return;
  }
  if (capacity > OpRecord::kInlineSlots) op->slots = new VarSlot[capacity];
  VarSlot* slots = op->slots;
  std::uint32_t n = 0;
  auto find = [&](VarState* var) -> VarSlot* {
    for (std::uint32_t i = 0; i < n; ++i) {
      if (slots[i].var == var) return &slots[i];
    }
    return nullptr;
  };
  std::size_t index = 0;
  for (Var var : writes) {
    if (!var.valid() || !is_live_var_of(var, owner)) [[unlikely]]
      throw_bad_slot_var(var, "write", index, props, owner);
    if (find(var.state()) == nullptr)
      slots[n++] = VarSlot{var.state(), nullptr, op, true, false, false};
    ++index;
  }
  index = 0;
  for (Var var : reads) {
    if (!var.valid() || !is_live_var_of(var, owner)) [[unlikely]]
      throw_bad_slot_var(var, "read", index, props, owner);
    if (VarSlot* slot = find(var.state())) {
      slot->reads_value = true;
    } else {
      slots[n++] = VarSlot{var.state(), nullptr, op, false, true, false};
    }
    ++index;
  }
  // Insertion sort: var lists are short, and usually one or two vars.
  for (std::uint32_t i = 1; i < n; ++i) {
    VarSlot slot = slots[i];
    std::uint32_t j = i;
    for (; j > 0 && std::less<VarState*>()(slot.var, slots[j - 1].var); --j) {
      slots[j] = slots[j - 1];
    }
    slots[j] = slot;
  }
  op->num_slots = n;
}

[[noreturn]] void throw_invalid_queue(const OpProps& props) {
  throw Error("tandem: push of op '" + std::string(props.name) + "': queue value " +
              std::to_string(static_cast<unsigned>(props.queue)) +
              " is not a tandem::Queue (compute, copy_h2d, copy_d2h, copy_d2d, comm)");
}

// For devices other than cpu(0) (prepare() lets cpu(0) through without the call).
void check_device(Device device, const OpProps& props) {
  if (device.is_accelerator()) {
    try {
      accelerator(device);  // created here on first use; one load afterwards
      return;
    } catch (const Error& e) {
      throw Error("tandem: push of op '" + std::string(props.name) + "': " + e.what());
    }
  }
  throw Error("tandem: push of op '" + std::string(props.name) + "' on " + to_string(device) +
              ": this engine has no worker queue for that device (only cpu(0) is available)");
}

// For pushes that are not compute ops on cpu(0) (prepare() lets those through without the call).
[[gnu::noinline]] void check_device_and_queue(Device device, const OpProps& props) {
  if (static_cast<unsigned>(props.queue) > static_cast<unsigned>(Queue::comm)) [[unlikely]]
    throw_invalid_queue(props);
  if (device != cpu()) check_device(device, props);
}

}  // namespace

constinit thread_local OpRecord* tls_current_op TANDEM_FAST_TLS = nullptr;

namespace {
thread_local bool tls_gave_completion = false;  // not on the hot path: the default TLS model
}  // namespace

bool gave_a_completion() noexcept {
  return tls_gave_completion;
}

void note_completion_given() noexcept {
  tls_gave_completion = true;
}

Var EngineCore::new_var() {
  VarState* state = acquire_var_state();
  state->owner.store(owner_, std::memory_order_relaxed);
  owner_->live_vars.fetch_add(1, std::memory_order_relaxed);
  return Var(state, state->generation.load(std::memory_order_relaxed));
}

void EngineCore::prepare(OpRecord* op, Device device, VarList reads, VarList writes,
                         const OpProps& props) {
  try {
    if (props.name == nullptr) throw Error("tandem: push of an op with a null name");
    // A compute op on the CPU, the common push, costs one test here; the rest is checked out
    // of line.
    if (device != cpu() || props.queue != Queue::compute) [[unlikely]]
      check_device_and_queue(device, props);
    fill_slots(op, reads, writes, props, owner_);
  } catch (...) {
    discard(op);
    throw;
  }
  op->device = device;
  op->props = props;
  op->sink = this;
  if (profiling::enabled()) [[unlikely]]
    profiling::on_push(op);
}

void EngineCore::prepare_delete(OpRecord* op, Var var) {
  // Moving the generation on is what deletes the handle: every copy of it is stale from here.
  // The compare-exchange makes one of two deletes of the same var fail, even on two threads.
  std::uint32_t generation = var.generation();
  VarState* state = var.state();
  if (!var.valid() || state->owner.load(std::memory_order_relaxed) != owner_ ||
      !state->generation.compare_exchange_strong(generation, generation + 1,
                                                 std::memory_order_relaxed)) [[unlikely]] {
    discard(op);
    throw_unusable_var(var, "delete_var", owner_, /*deleting=*/true);
  }
  owner_->live_vars.fetch_sub(1, std::memory_order_relaxed);
  // The deleter op itself holds the state under its new generation. A deletion is cheap (it
  // frees memory), so on an idle var it runs at once on the calling thread (inline_when_ready):
  // handing it to a worker cost more than the deleter, and moved the op record, the var state
  // and the freed memory to the worker's caches, away from the thread that makes the next array.
  prepare(op, cpu(), {}, {Var(state, generation + 1)},
          OpProps{.name = "delete_var", .no_skip = true, .inline_when_ready = true});
  op->var_to_delete = state;
}

void EngineCore::discard(OpRecord* op) noexcept {
  op->destroy_callable();
  release_op_record(op);
}

void EngineCore::skip(OpRecord* op, const ErrorRef& poison, int worker) noexcept {
  ops_skipped_.fetch_add(1, std::memory_order_relaxed);
  log().debug("skipping op '{}': an input is poisoned", op->props.name);
  destroy_callable_inside(op);
  op->worker = worker;
  finish(op, poison, /*skipped=*/true);
}

void EngineCore::execute(OpRecord* op, int worker) noexcept {
  // Device fences to settle or a profiled op: both rare on the CPU path, one branch for both.
  if ((op->needs_fence_sync.load(std::memory_order_relaxed) && !op->is_waiter) ||
      profiling::profiled(op)) [[unlikely]] {
    return execute_general(op, worker);
  }
  if (!op->props.no_skip) {
    if (const ErrorRef* oldest = oldest_poison(op, nullptr)) [[unlikely]] {
      return skip(op, *oldest, worker);
    }
  }
  op->worker = worker;
  // The common case, an op that returned and completes with its body, goes straight to finish:
  // a tail call, since nothing on this path has a destructor left to run after it.
  if (run_plain_body(op, worker) && !op->props.async_completion) [[likely]] {
    return finish(op, kNoError, false);
  }
  end_body(op, std::exchange(op->body_error, nullptr));
}

// run_body() without the profiler's counters, for execute's common path. Inline, with the error
// kept in the record rather than returned: an exception_ptr returned by value would have to be
// destroyed after finish(), so finish() could not be a tail call.
[[gnu::always_inline]] inline bool EngineCore::run_plain_body(OpRecord* op, int worker) noexcept {
  OpRecord* outer = tls_current_op;
  tls_current_op = op;
  bool returned = true;
  RunContext ctx(op, worker);
  try {
    op->run(ctx);
  } catch (...) {
    op->body_error = std::current_exception();
    returned = false;
  }
  // Still inside the op (see destroy_callable_inside).
  op->destroy_callable();
  tls_current_op = outer;
  return returned;
}

void EngineCore::execute_general(OpRecord* op, int worker) noexcept {
  ErrorRef fence_error;
  // Only when a var came with device fences (waiters settle theirs in the waiting thread).
  if (op->needs_fence_sync.load(std::memory_order_relaxed) && !op->is_waiter) {
    fence_error = settle_fences(op);
  }
  if (!op->props.no_skip) {
    if (const ErrorRef* oldest = oldest_poison(op, fence_error ? &fence_error : nullptr)) {
      skip(op, *oldest, worker);
      return;
    }
  }
  op->worker = worker;
  if (profiling::profiled(op)) profiling::on_start(op);
  std::exception_ptr error = run_body(op, worker);
  if (!error && !op->props.async_completion) {
    finish(op, kNoError, false);
    return;
  }
  end_body(op, std::move(error));
}

std::exception_ptr EngineCore::run_body(OpRecord* op, int worker) noexcept {
  OpRecord* outer = tls_current_op;
  tls_current_op = op;
  std::exception_ptr error;
  RunContext ctx(op, worker);
  // Profiled ops: the launch counters before the body, for what it launched.
  LaunchCounts counts_before{};
  if (profiling::profiled(op)) [[unlikely]]
    counts_before = launch_counts();
  try {
    op->run(ctx);
  } catch (...) {
    error = std::current_exception();
  }
  if (profiling::profiled(op)) [[unlikely]]
    profiling::on_body_end(op, counts_before);
  // Still inside the op (see destroy_callable_inside).
  op->destroy_callable();
  tls_current_op = outer;
  return error;
}

void EngineCore::destroy_callable_inside(OpRecord* op) noexcept {
  OpRecord* outer = tls_current_op;
  tls_current_op = op;
  op->destroy_callable();
  tls_current_op = outer;
}

void EngineCore::end_body(OpRecord* op, std::exception_ptr error) noexcept {
  if (op->props.async_completion) {
    if (!op->completion_taken) {
      if (!error) {
        error = std::make_exception_ptr(
            Error("the op was pushed with async_completion but never took its completion "
                  "(call RunContext::take_completion)"));
      }
      finish_with(op, error);
      return;
    }
    // The Completion may fire before, during or after this; whoever drops the last reference
    // settles the op. After the fetch_sub the record may already be recycled.
    op->body_error = error;
    if (op->completion_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) complete(op);
    return;
  }
  finish_with(op, error);
}

void EngineCore::complete(OpRecord* op) noexcept {
  std::exception_ptr error = op->body_error ? op->body_error : op->completion_error;
  op->body_error = nullptr;
  op->completion_error = nullptr;
  finish_with(op, std::move(error));
}

ErrorRef EngineCore::record_failure(const OpRecord* op, std::exception_ptr error) {
  ops_failed_.fetch_add(1, std::memory_order_relaxed);
  auto record = std::make_shared<ErrorRecord>(wrap_op_error(op->props.name, op->device, error),
                                              op->push_sequence);
  log().debug("op '{}' on {} failed: {}", op->props.name, to_string(op->device),
              describe(record->error));
  errors_.record(record);
  return record;
}

void EngineCore::finish_with(OpRecord* op, std::exception_ptr error) noexcept {
  if (!error) {
    finish(op, nullptr, false);
    return;
  }
  finish(op, record_failure(op, std::move(error)), false);
}

std::string EngineCore::lane_name(int worker) const {
  return worker < 0 ? "inline" : "cpu worker " + std::to_string(worker);
}

void EngineCore::finish_recorded_or_streamed(OpRecord* op, const ErrorRef& outcome,
                                             bool skipped) noexcept {
  if (profiling::profiled(op)) record_profile(op, outcome, skipped);
  if (op->stream != nullptr) {
    op->stream = nullptr;
    op->start_event.reset();
    op->end_event.reset();
  }
}

void EngineCore::record_profile(OpRecord* op, const ErrorRef& outcome, bool skipped) noexcept {
  try {
    if (op->stream != nullptr) {
      profiling::on_finish_device(op, op->stream->name(), skipped, outcome != nullptr && !skipped);
    } else {
      profiling::on_finish(op, lane_name(op->worker), skipped, outcome != nullptr && !skipped);
    }
  } catch (...) {
    log().warn("profiler: could not record op '{}' (out of memory?)", op->props.name);
  }
}

void EngineCore::finish(OpRecord* op, const ErrorRef& outcome, bool skipped) noexcept {
  // Profiled or launched on a stream: both rare on the CPU path, so one test covers both.
  if (profiling::profiled_or_on_stream(op)) [[unlikely]]
    finish_recorded_or_streamed(op, outcome, skipped);
  // Waiters only observe; user ops set (or, on success, clear) the poison of what they wrote.
  if (!op->is_waiter) {
    for (std::uint32_t i = 0; i < op->num_slots; ++i) {
      const VarSlot& slot = op->slots[i];
      // Compare first: the common case (no error before, none now) then writes nothing.
      if (slot.write && !slot.keeps_poison && slot.var->poison != outcome)
        slot.var->poison = outcome;
    }
  }
  release(op);
}

void EngineCore::check_not_inside_op(const char* call) {
  if (OpRecord* op = tls_current_op) {
    throw DeadlockError(std::string("tandem: ") + call + " called from inside op '" +
                        op->props.name + "' on " + to_string(op->device) +
                        ": an op cannot wait for the engine that runs it (it could wait for "
                        "itself); push a follow-up op that reads the result instead");
  }
}

VarState* EngineCore::checked_state(Var var, const char* call) const {
  if (!var.valid() || !is_live_var_of(var, owner_)) [[unlikely]]
    throw_unusable_var(var, call, owner_, /*deleting=*/false);
  return var.state();
}

void EngineCore::throw_if_poisoned(const ErrorRef& poison) {
  if (!poison) return;
  poison->thrown.store(true, std::memory_order_relaxed);
  std::rethrow_exception(poison->error);
}

void EngineCore::throw_first_unthrown_error() {
  if (ErrorRef error = errors_.take_first_unthrown()) std::rethrow_exception(error->error);
}

EngineStats EngineCore::base_stats() const {
  EngineStats stats;
  stats.ops_pushed = ops_pushed_.load(std::memory_order_relaxed) & kSequenceMask;
  stats.ops_failed = ops_failed_.load(std::memory_order_relaxed);
  stats.ops_skipped = ops_skipped_.load(std::memory_order_relaxed);
  stats.cross_stream_waits = cross_stream_waits_.load(std::memory_order_relaxed);
  stats.vars_alive = static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, owner_->live_vars.load(std::memory_order_relaxed)));
  return stats;
}

}  // namespace tandem::detail

namespace tandem {

bool inside_op() noexcept {
  return detail::current_op() != nullptr;
}

}  // namespace tandem
