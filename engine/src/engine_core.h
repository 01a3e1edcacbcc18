// EngineCore: what the threaded and the naive engine share: turning push arguments into an op
// record, running an op's body with the poison/skip rules, and settling its outcome (poison,
// error registry, counters). Each engine adds how ops wait for their vars and where they run.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/fast_tls.h"
#include "base/logging.h"
#include "device_work.h"
#include "error_record.h"
#include "tandem/engine.h"
#include "var_state.h"

namespace tandem::detail {

struct GraphPlan;  // captured_graph.h
struct InlineSegment;

// An op's exception wrapped in an OpError naming the op and its device (the original nested).
std::exception_ptr wrap_op_error(const std::string& op_name, Device device,
                                 std::exception_ptr error);

// The op running on this thread, if any (ops can nest when a naive engine runs a push inline).
// Inline: the threaded engine's push reads it.
extern constinit thread_local OpRecord* tls_current_op TANDEM_FAST_TLS;
inline OpRecord* current_op() noexcept {
  return tls_current_op;
}
// True once this thread has invoked (or dropped) a Completion: it completes async ops.
bool gave_a_completion() noexcept;
void note_completion_given() noexcept;

// Receives the device work of every accelerator op launched with fences (the threaded engine's
// per-device executors keep it until it has ended, for wait_all and for error resolution).
class DeviceWorkTracker {
 public:
  virtual void track(DeviceWorkRef work) = 0;

 protected:
  ~DeviceWorkTracker() = default;
};

// When a wait gives up.
using Deadline = std::chrono::steady_clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();
inline Deadline deadline_after(std::chrono::milliseconds timeout) {
  const auto now = std::chrono::steady_clock::now();
  return timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(kNoDeadline - now)
             ? kNoDeadline
             : now + timeout;
}

// For a wait that cannot tell whether it advances: every report is a warning.
struct NoProgress {
  std::uint64_t operator()() const { return 0; }
};

// Waits on `wait_until(deadline)` in steps: each time `warn_after` passes it logs what the wait
// is blocked on (`describe()`); at `deadline` it throws TimeoutError(describe()). `wait_until`
// returns true once the condition holds. `warn_after` of 0 means never. `progress()` is a count
// that grows as the wait's work gets done (wait_all: the ops finished): a report after an
// interval in which it grew is an info line (a long wait that advances is not stuck, e.g. an
// epoch's last wait_all on a slow device); one after an interval in which it did not, a warning.
template <class WaitUntil, class Describe, class Progress = NoProgress>
void wait_with_report(WaitUntil&& wait_until, Deadline deadline,
                      std::chrono::milliseconds warn_after, const char* call, Describe&& describe,
                      Progress&& progress = {});

class EngineCore : public CompletionSink {
 public:
  explicit EngineCore(EngineConfig config) : config_(std::move(config)) {}
  virtual ~EngineCore() = default;

  const EngineConfig& config() const { return config_; }
  // The bookkeeping of this core's vars (var_owner.h). Set once, before the core is used; a
  // stand-in core that takes over the vars of a retired one is given the same owner.
  void set_var_owner(VarOwner& owner) { owner_ = &owner; }
  Var new_var();

  // Runs a ready op on lane `worker` (-1: inline). Skips it when an input is poisoned; settles
  // it unless it completes asynchronously.
  void execute(OpRecord* op, int worker) noexcept;
  // Called by Completion when an async op's completion and body have both ended.
  void complete(OpRecord* op) noexcept override;
  void on_completion_taken(const OpRecord* op) noexcept override;
  void on_completion_given(const OpRecord* op) noexcept override;

  // What a blocked wait waits for, for its warning and its TimeoutError (wait_report.cc).
  // The var's holder and the ops queued ahead, then, for a few steps, what the holder waits
  // for; async ops waiting for their Completion are named as such.
  std::string describe_var_wait(VarState* var, bool for_write);
  // The async ops waiting for their Completion ("" if none).
  std::string describe_pending_completions();

  // Accelerator ops (device_ops.cc). Launches a ready accelerator op on `stream`: makes the
  // stream wait for its vars' fences, runs its body (which enqueues work on the stream), then
  // either fences its vars with the event recorded after it and hands that work to `tracker`,
  // or (`synchronize`) waits for the stream and completes with the stream's error. Skips the op
  // when an input is poisoned, like execute.
  void launch(OpRecord* op, Stream& stream, bool synchronize, DeviceWorkTracker* tracker) noexcept;
  // The error record that finished device work resolves to; null if it succeeded. A failure
  // of the work's own is recorded once (ErrorRegistry); work skipped on the device because an
  // input failed resolves to the oldest of its inputs' records (see DeviceWork::inputs).
  ErrorRef device_error(DeviceWork& work);
  // Blocks until `work` has ended; never throws.
  static void wait_for(const DeviceWork& work) noexcept;
  // For a granted CPU op: whether the device work fencing the vars it will wait for (as
  // settle_fences does) has all ended, asked without blocking; and the blocking wait for it,
  // which leaves the fences and errors to settle_fences. Both never throw (no memory: answer
  // false / return early, and settle_fences waits on the worker as a fallback).
  bool fences_ended(OpRecord* op) noexcept;
  void wait_for_fences(OpRecord* op) noexcept;

  // Engine entry points, implemented by each kind.
  virtual void submit(OpRecord* op, Device device, VarList reads, VarList writes,
                      const OpProps& props) = 0;
  virtual void submit_delete(OpRecord* op, Var var) = 0;
  // Takes the push ticket of `op`, whose slots, device and props are filled, and queues it (the
  // naive engine runs it): the rest of submit after prepare. A replayed graph segment's op.
  virtual void submit_prepared(OpRecord* op) = 0;
  // Waits give up at `deadline` (kNoDeadline: never) with TimeoutError.
  virtual void wait_for_var(Var var, Deadline deadline) = 0;
  virtual void wait_to_write(Var var, Deadline deadline) = 0;
  virtual void wait_all(Deadline deadline) = 0;
  virtual EngineStats stats() const = 0;
  // The threads that run CPU ops (see Engine::cpu_workers); none for an inline core.
  virtual int cpu_workers() const { return 0; }
  virtual int priority_workers() const { return 0; }
  virtual int worker_lanes() const { return 0; }
  // Finishes every pending op; false if some were still running after `timeout`.
  virtual bool shutdown(std::chrono::milliseconds timeout) = 0;

  // Captured graphs (captured_graph.h; graph_recorder.cc, graph_replay.cc). A recorded op is
  // validated and filled as a push would (throws tandem::Error after discarding it), but never
  // queued; `replay` enters every step of `plan` in capture order.
  void prepare_recorded(OpRecord* op, Device device, VarList reads, VarList writes,
                        const OpProps& props);
  void replay(const std::shared_ptr<GraphPlan>& plan);
  // Automatic capture (auto_capture.cc): enters `plan` as replay does, but each node runs the
  // closure of bodies[node] (pushed this time, unprepared, freed after it runs) instead of its
  // own; a node that is its own body runs its own closure once, which is then destroyed.
  void replay_window(const std::shared_ptr<GraphPlan>& plan, std::shared_ptr<OpRecord*[]> bodies);

 protected:
  // Fills `op` from push arguments (validated, deduplicated, sorted by var). On bad input,
  // throws tandem::Error after discarding `op`.
  void prepare(OpRecord* op, Device device, VarList reads, VarList writes, const OpProps& props);
  void prepare_delete(OpRecord* op, Var var);
  // Frees an op that will never run.
  static void discard(OpRecord* op) noexcept;
  // Releases the op's vars (waking the ops behind it) and recycles the record.
  virtual void release(OpRecord* op) noexcept = 0;

  static void check_not_inside_op(const char* call);
  // The state of `var`; throws tandem::Error naming `call` when the var is invalid, deleted or
  // another engine's.
  VarState* checked_state(Var var, const char* call) const;
  // Throws the poison's error (marking it thrown) if there is one.
  static void throw_if_poisoned(const ErrorRef& poison);
  // Rethrows the oldest error that no sync point has thrown yet.
  void throw_first_unthrown_error();

  // Waits for the device work fencing the vars of CPU op `op` (writes take their vars' fences
  // off); returns the oldest error of a fence on a var it reads that is not already poisoned.
  ErrorRef settle_fences(OpRecord* op) noexcept;
  // device_error() with the device-error mutex held.
  ErrorRef resolve_locked(DeviceWork& work);

  EngineStats base_stats() const;
  // The ops of a replayed graph segment run in its GraphRun (graph_replay.cc), with the poison,
  // skip and error rules of execute(): run_replayed_node runs (or skips) one, at `position` in
  // the segment of the unit pushed as `sequence`, and sets the poison of what it writes.
  friend class GraphRun;
  using FenceErrors = std::vector<std::pair<VarState*, ErrorRef>>;
  // `body`, when not null, is the record whose closure runs in place of the node's (automatic
  // capture); it is destroyed (and released, unless it is the node) once run or skipped.
  void run_replayed_node(OpRecord* node, OpRecord* body, std::uint64_t sequence,
                         std::uint32_t position, std::uint8_t parity, int worker,
                         const FenceErrors* fence_errors) noexcept;
  void replay_segment(const std::shared_ptr<GraphPlan>& plan, const InlineSegment& segment,
                      std::shared_ptr<OpRecord*[]> bodies);
  // Enters every step of `plan` in order; `bodies` as for replay_window (null: replay).
  void replay_steps(const std::shared_ptr<GraphPlan>& plan,
                    const std::shared_ptr<OpRecord*[]>& bodies);
  // Automatic capture: pushes node `n` of `plan` alone, running `body`'s closure (or, when the
  // body is the node, the node's own once), with the node's vars.
  void push_window_node(const std::shared_ptr<GraphPlan>& plan, std::uint32_t n, OpRecord* body);
  // The profiler's name for worker lane `worker` (as passed to execute).
  virtual std::string lane_name(int worker) const;

  // A push ticket: the op's push sequence in the low bits and, above them, the threaded
  // engine's wait_all epoch, so that one atomic increment gives an op both (see
  // ThreadedEngine::wait_all).
  static constexpr int kEpochShift = 48;
  static constexpr std::uint64_t kSequenceMask = (std::uint64_t{1} << kEpochShift) - 1;
  static constexpr std::uint64_t kOneEpoch = std::uint64_t{1} << kEpochShift;
  std::uint64_t pushed_count() const {
    return ops_pushed_.load(std::memory_order_seq_cst) & kSequenceMask;
  }

  // Async ops whose Completion is out and not yet invoked: how many, and which (for wait
  // reports; touched only by async ops, under its mutex).
  std::atomic<int> completions_outstanding_{0};
  std::mutex pending_completions_mutex_;
  std::vector<const OpRecord*> pending_completions_;

  // Push tickets, taken by pushing threads only; on its own cache line so that workers, which
  // read the engine's vtable and config on every op, never miss on it.
  alignas(64) std::atomic<std::uint64_t> ops_pushed_{0};

 private:
  // The oldest poison among the vars the op reads (or `also`, if older); null if none. Inline:
  // every op passes here before its body, and the call itself cost about as much as the loop.
  static const ErrorRef* oldest_poison(const OpRecord* op, const ErrorRef* also) noexcept {
    const ErrorRef* oldest = also;
    for (std::uint32_t i = 0; i < op->num_slots; ++i) {
      const VarSlot& slot = op->slots[i];
      const ErrorRef& poison = slot.var->poison;
      if (slot.reads_value && poison && (!oldest || pushed_before(*poison, **oldest))) {
        oldest = &poison;
      }
    }
    return oldest;
  }
  void skip(OpRecord* op, const ErrorRef& poison, int worker) noexcept;
  // Runs the body on this thread; returns what it threw.
  std::exception_ptr run_body(OpRecord* op, int worker) noexcept;
  // execute() for an op with device fences to settle, or a profiled one (out of line: the
  // common path stays free of their locals).
  [[gnu::noinline]] void execute_general(OpRecord* op, int worker) noexcept;
  // The body of a plain op (not profiled): true if it returned, else its exception is in
  // op->body_error.
  bool run_plain_body(OpRecord* op, int worker) noexcept;
  // Destroys the op's callable as part of the op: what its captures' destructors push (the
  // deletion of an array it held, say) counts as pushed from inside the op, so it never blocks
  // on backpressure while the ops that would make room wait for this one.
  static void destroy_callable_inside(OpRecord* op) noexcept;
  // After the body: settles the op, or leaves that to its Completion (async ops).
  void end_body(OpRecord* op, std::exception_ptr error) noexcept;
  void finish_with(OpRecord* op, std::exception_ptr error) noexcept;
  // Records `error` as the failure of `op` (wrapped to name it), counts it and returns it.
  ErrorRef record_failure(const OpRecord* op, std::exception_ptr error);
  void finish(OpRecord* op, const ErrorRef& outcome, bool skipped) noexcept;
  // The profiler's record of a finished op; out of line, so finish() stays small when it is off.
  // finish() for an op that is profiled or was launched on a stream.
  [[gnu::cold, gnu::noinline]] void finish_recorded_or_streamed(OpRecord* op,
                                                                const ErrorRef& outcome,
                                                                bool skipped) noexcept;
  [[gnu::cold, gnu::noinline]] void record_profile(OpRecord* op, const ErrorRef& outcome,
                                                   bool skipped) noexcept;

  alignas(64) EngineConfig config_;
  VarOwner* owner_ = nullptr;
  ErrorRegistry errors_;
  std::atomic<std::uint64_t> ops_failed_{0};
  std::atomic<std::uint64_t> ops_skipped_{0};
  // Device-side waits of a stream on another stream's work (launcher threads; see launch()).
  std::atomic<std::uint64_t> cross_stream_waits_{0};
  // Guards the resolution state of DeviceWork (error paths only).
  std::mutex device_errors_mutex_;
};

template <class WaitUntil, class Describe, class Progress>
void wait_with_report(WaitUntil&& wait_until, Deadline deadline,
                      std::chrono::milliseconds warn_after, const char* call, Describe&& describe,
                      Progress&& progress) {
  using std::chrono::steady_clock;
  const auto start = steady_clock::now();
  Deadline next_warn = warn_after.count() > 0 ? deadline_after(warn_after) : kNoDeadline;
  std::uint64_t progress_seen = progress();
  for (;;) {
    if (wait_until(std::min(deadline, next_warn))) return;
    const auto now = steady_clock::now();
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
    if (now >= deadline) {
      throw TimeoutError(std::string("tandem: ") + call + " timed out after " +
                         std::to_string(waited) + " ms: " + describe());
    }
    if (now >= next_warn) {
      const std::uint64_t progress_now = progress();
      if (progress_now != progress_seen) {
        log().info(
            "{} still waiting after {} ms, advancing ({} op(s) finished in the last {} ms): {}",
            call, waited, progress_now - progress_seen, warn_after.count(), describe());
      } else {
        log().warn("{} still blocked after {} ms: {}", call, waited, describe());
      }
      progress_seen = progress_now;
      next_warn = now + warn_after;
    }
  }
}

}  // namespace tandem::detail
