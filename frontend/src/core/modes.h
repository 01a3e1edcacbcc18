// The mode stack: what the layers above the core (autograd recording, the export trace, the
// capture window) do to the front end's ops, as one thread-local stack that an op asks once.
//
// Every op has a record (core/op_definition.h) and runs through detail::invoke (core/invoke.h),
// which reports one OpCall pointing at the record; a view (reshape, slice, transpose) reports
// itself with detail::report_view. The modes read the record, never the op: no mode has a case
// per op.
//
// Cost when no mode is on (every op, every call): one thread-local load and a branch. The
// core and the op files know the stack only: each mode lives in its own folder (autograd/
// records gradients, graph/ traces for export and opens capture windows) and enters the stack
// with a scope (ModeScope, CaptureWindow, autograd's RecordScope), so no arrow runs from an op
// up to a mode.
//
// The modes are kept in a fixed order (ModeKind's), whatever order they were entered in, so
// every event reaches the export trace before autograd: an op a graph cannot hold is refused
// before anything is recorded.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

struct Storage;
struct OpDefinition;

// The modes, in the order in which they see an event.
enum class ModeKind : std::uint8_t {
  trace,    // the export trace (graph/op_trace.h): ops become graph nodes
  record,   // autograd recording (autograd/): ops become tape nodes
  capture,  // a capture window (graph/capture_window.h): storage and sync points change
};
inline constexpr int kModeKindCount = 3;
constexpr std::uint8_t mode_bit(ModeKind kind) {
  return static_cast<std::uint8_t>(1u << static_cast<unsigned>(kind));
}

// Where a gradient rule may write the gradient of one of its inputs itself: the gradient buffer
// of the leaf the input is (or a view of it, for an input that is a view of a leaf), overwritten
// (add = false) or added into (add = true). The rule sets `written` when it did; otherwise it
// returns that input's gradient as usual and backward delivers it.
struct GradientDestination {
  NDArray buffer;  // undefined: no destination for this input
  bool add = false;
  bool written = false;
};

// An op's gradient rule for one call (OpDefinition::gradient builds it): the rule gets the
// outputs' gradients and the `saved` arrays (detached, and checked at backward time not to have
// been written in place since), and returns one gradient per input (undefined for an input
// that needs none).
struct OpGradient {
  std::vector<NDArray> inputs{};
  std::vector<NDArray> saved{};
  std::function<std::vector<NDArray>(const std::vector<NDArray>& output_grads,
                                     const std::vector<NDArray>& saved)>
      rule{};
  // Optional, beside `rule` (same gradients): a rule that may write an input's gradient straight
  // into the destination backward offers (one entry per input, most of them empty), returning
  // undefined for the inputs it wrote. dot's gemm writes or accumulates into a weight's buffer.
  std::function<std::vector<NDArray>(const std::vector<NDArray>& output_grads,
                                     const std::vector<NDArray>& saved,
                                     std::vector<GradientDestination>& destinations)>
      rule_into{};
  // Optional, for an op whose one output is a view of its one input (transpose): the same view
  // taken of an array shaped like the input, so that a destination for the input's gradient
  // gives one for the output's.
  std::function<NDArray(const NDArray& input_shaped)> same_view_of{};
};

// One op's call as the modes see it: its record (core/op_definition.h), its inputs (a null
// pointer or an undefined array is an optional input left out), its attributes (the record's own
// type), its output and the intermediates it kept for its gradient (two, undefined when unused).
// Built only when a mode is on.
struct OpCall {
  const OpDefinition* definition = nullptr;
  // The name autograd gives the op's node: the record's, or the function's where several
  // functions share a record (copyto and pin_memory are copies, operator[] is an index).
  const char* name = nullptr;
  const NDArray* const* inputs = nullptr;
  std::size_t input_count = 0;
  const void* attrs = nullptr;
  NDArray* out = nullptr;
  const NDArray* kept = nullptr;
  // Which inputs the recording wants a gradient for (bit i: input i; inputs past 64: all), set
  // by autograd before it asks the record's gradient: a rule computes and saves only those.
  std::uint64_t gradient_inputs = ~std::uint64_t{0};

  const NDArray& input(std::size_t i) const { return *inputs[i]; }
  bool needs_gradient(std::size_t i) const { return i >= 64 || ((gradient_inputs >> i) & 1u) != 0; }
};

// One mode. Its events run after the op's work is queued (op) or before it (the others); a
// mode refuses an op by throwing tandem::Error.
class Mode {
 public:
  explicit Mode(ModeKind kind) : kind_(kind) {}
  virtual ~Mode() = default;
  Mode(const Mode&) = delete;
  Mode& operator=(const Mode&) = delete;

  ModeKind kind() const { return kind_; }

  // An op, its work queued.
  virtual void op(const OpCall& call) { (void)call; }
  // Whether the op about to run with these inputs should keep what its gradient rule reads.
  virtual bool wants_gradient(const NDArray* const* inputs, std::size_t count) const {
    (void)inputs;
    (void)count;
    return false;
  }
  // `op` is about to write `target` in place (from `source`, when given).
  virtual void in_place_write(const char* op, const NDArray& target, const NDArray* source) {
    (void)op;
    (void)target;
    (void)source;
  }
  // `op` has no record (a random draw, an op of the user's own): `why` says what it would
  // become in a graph.
  virtual void opaque_op(const std::string& op, const std::string& why) {
    (void)op;
    (void)why;
  }
  // A storage with no handle left whose var was created before the mode began (capture only).
  virtual void defer_deletion(Storage* storage) { (void)storage; }

 private:
  ModeKind kind_;
};

// The calling thread's modes. Hot fields first: `observing` says whether any mode sees ops.
struct ModeStack {
  std::uint8_t observing = 0;        // mode bits of the modes that see ops (trace, record)
  std::uint8_t on = 0;               // mode bits of every mode on
  Mode* modes[kModeKindCount] = {};  // by kind: at most one of each
  // Train mode (autograd::train_mode(), record(true)): dropout drops, batch_norm uses the
  // batch's statistics. Not a mode of its own: a flag every op may read.
  bool training = false;
};
// constinit: reading it is a plain TLS access (no init-function check).
extern constinit thread_local ModeStack mode_stack;

inline bool ops_observed() {
  return mode_stack.observing != 0;
}
inline bool mode_on(ModeKind kind) {
  return (mode_stack.on & mode_bit(kind)) != 0;
}
inline bool training() {
  return mode_stack.training;
}
inline Mode* mode_of(ModeKind kind) {
  return mode_stack.modes[static_cast<int>(kind)];
}

// Tells each mode that sees ops about `call` (the caller checked ops_observed()).
void report_op(const OpCall& call);
// Whether a mode wants the op with these inputs to keep what its gradient rule reads.
bool gradient_wanted(std::span<const NDArray* const> inputs);
// Tells each mode that sees ops about a call of `definition` (none when no mode is on): the
// report of an op whose result is a view or whose push is its own (copies).
void report_call(const OpDefinition& definition, std::span<const NDArray* const> inputs,
                 const void* attrs, NDArray& out, const char* name = nullptr);
inline void report_view(const OpDefinition& definition,
                        std::initializer_list<const NDArray*> inputs, const void* attrs,
                        NDArray& out, const char* name = nullptr) {
  if (mode_stack.observing == 0) [[likely]]
    return;
  report_call(definition, std::span<const NDArray* const>(inputs.begin(), inputs.size()), attrs,
              out, name);
}
// Tells the modes that `op` writes `target` in place (from `source`), then bumps the target's
// write version. Every in-place write goes through here.
void note_in_place_write(const char* op, const NDArray& target, const NDArray* source = nullptr);
// Tells the modes about an op without a record (they may refuse it).
void note_opaque_op(const std::string& op, const std::string& why);

// Puts `mode` on the stack for its lifetime (the one of its kind before it comes back after).
// Throws tandem::Error when `mode` is null.
class ModeScope {
 public:
  explicit ModeScope(Mode* mode);
  ~ModeScope();
  ModeScope(const ModeScope&) = delete;
  ModeScope& operator=(const ModeScope&) = delete;

 private:
  Mode* previous_;
  ModeKind kind_;
};

// Sets the mode of `kind` (null: none), returns the one before. For scopes kept elsewhere
// (autograd's RecordScope); ModeScope is the usual way.
Mode* set_mode(ModeKind kind, Mode* mode) noexcept;

// Hides the modes that see ops from the ops a composite op is made of (its dense copies, its
// steps); the capture window stays on. report() then tells the hidden modes about the
// composite op itself (ask gradient_wanted() before hiding them).
class OpModesPaused {
 public:
  OpModesPaused();
  ~OpModesPaused();
  OpModesPaused(const OpModesPaused&) = delete;
  OpModesPaused& operator=(const OpModesPaused&) = delete;

  bool any() const { return saved_.observing != 0; }
  void report(const OpCall& call) const;

 private:
  ModeStack saved_;
};

// Hides autograd recording only (the export trace still sees each op): for an op built of
// others whose result has no gradient (one_hot, accuracy).
class RecordingPaused {
 public:
  RecordingPaused() : previous_(set_mode(ModeKind::record, nullptr)) {}
  ~RecordingPaused() { set_mode(ModeKind::record, previous_); }
  RecordingPaused(const RecordingPaused&) = delete;
  RecordingPaused& operator=(const RecordingPaused&) = delete;

 private:
  Mode* previous_;
};

// Whether a mode must see each op that a hybridized function runs (the export trace): a replay
// of a captured graph would hide them, so hybridized calls run their ops one by one.
inline bool modes_see_each_op() {
  return mode_on(ModeKind::trace);
}

// True while a capture window is open on this thread.
inline bool capturing_on_this_thread() noexcept {
  return mode_on(ModeKind::capture);
}
// Throws tandem::Error naming `sync_call` when a capture window is open on this thread: the
// recorded ops have not run, so there is nothing to wait for.
void throw_if_capturing(const char* sync_call);

}  // namespace tandem::nd::detail
