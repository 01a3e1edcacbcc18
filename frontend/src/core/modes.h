// The mode stack: what the layers above the core (autograd recording, the export trace, the
// capture window) do to the front end's ops, as one thread-local stack that an op asks once.
//
// An op queues its work, then reports itself with one OpCall:
//
//   NDArray out = ...;                                          // checks, allocation, push
//   if (detail::ops_observed()) detail::report_op(OpCall::unary(op, x, out));
//   return out;
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
#include <optional>
#include <string>
#include <vector>

#include "tandem/nd/ndarray.h"
#include "tandem/ops/op_kinds.h"

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

// A gradient an op gives itself (an op made of several kernels, with a fused rule): the rule
// gets the outputs' gradients and the `saved` arrays (detached, and checked at backward time
// not to have been written in place since), and returns one gradient per input (undefined for
// an input that needs none).
struct OpGradient {
  std::vector<NDArray> inputs;
  std::vector<NDArray> saved;
  std::function<std::vector<NDArray>(const std::vector<NDArray>& output_grads,
                                     const std::vector<NDArray>& saved)>
      rule;
};

// The forms of call a mode tells apart: each carries its own fields of OpCall.
enum class OpForm : std::uint8_t {
  unary,          // unary(x)
  binary,         // binary(x, y)
  binary_scalar,  // binary(x, scalar), scalar_first
  reduce,         // reduce(x), axis (none: every element), keepdims
  dot,            // x . y
  transpose,      // x, axes
  reshape,        // x
  slice,          // x, begin, end, step along axis 0
  index,          // x, begin = the index along axis 0
  copy,           // name (copy, copyto, astype), x
  concat,         // arrays, axis
  defined,        // an op with a record (core/op_definition.h): definition, inputs,
                  // input_count, attrs, kept
};

// One op's call as the modes see it: its form, its inputs and output, and its attributes.
// Fields a form does not use keep their defaults. Built only when a mode is on.
struct OpCall {
  explicit OpCall(OpForm form_, const char* name_ = nullptr) : form(form_), name(name_) {}

  OpForm form;
  const char* name;
  const NDArray* x = nullptr;
  const NDArray* y = nullptr;
  const std::vector<NDArray>* arrays = nullptr;
  NDArray* out = nullptr;
  ops::UnaryOp unary_op{};
  ops::BinaryOp binary_op{};
  ops::ReduceOp reduce_op{};
  double scalar = 0;
  bool scalar_first = false;
  bool keepdims = false;
  std::optional<int> axis;
  std::int64_t begin = 0, end = 0, step = 1;
  const std::vector<int>* axes = nullptr;
  // OpForm::defined: the op's record, its inputs (a null pointer or an undefined array is an
  // optional input left out), its attributes (the record's own type) and the intermediates it
  // kept for its gradient (two, undefined when unused).
  const OpDefinition* definition = nullptr;
  const NDArray* const* inputs = nullptr;
  std::size_t input_count = 0;
  const void* attrs = nullptr;
  const NDArray* kept = nullptr;

  static OpCall unary(ops::UnaryOp op, const NDArray& x, NDArray& out) {
    OpCall c(OpForm::unary);
    c.unary_op = op;
    c.x = &x;
    c.out = &out;
    return c;
  }
  static OpCall binary(ops::BinaryOp op, const NDArray& a, const NDArray& b, NDArray& out) {
    OpCall c(OpForm::binary);
    c.binary_op = op;
    c.x = &a;
    c.y = &b;
    c.out = &out;
    return c;
  }
  static OpCall binary_scalar(ops::BinaryOp op, const NDArray& a, double scalar, bool scalar_first,
                              NDArray& out) {
    OpCall c(OpForm::binary_scalar);
    c.binary_op = op;
    c.x = &a;
    c.scalar = scalar;
    c.scalar_first = scalar_first;
    c.out = &out;
    return c;
  }
  static OpCall reduce(ops::ReduceOp op, const NDArray& x, std::optional<int> axis, bool keepdims,
                       NDArray& out) {
    OpCall c(OpForm::reduce);
    c.reduce_op = op;
    c.x = &x;
    c.axis = axis;
    c.keepdims = keepdims;
    c.out = &out;
    return c;
  }
  static OpCall of(OpForm form, const char* name, const NDArray& x, NDArray& out) {
    OpCall c(form, name);
    c.x = &x;
    c.out = &out;
    return c;
  }
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

  // An op of the forms above, its work queued.
  virtual void op(const OpCall& call) { (void)call; }
  // Whether the op about to run should build its own gradient rule (OpCall::gradient).
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
  // `op` has no OpCall form (a random draw, an op of the user's own): `why` says what it
  // would become in a graph.
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
// Whether a mode wants the op with these inputs to build its own gradient rule.
bool gradient_wanted(std::initializer_list<const NDArray*> inputs);
// Tells the modes that `op` writes `target` in place (from `source`), then bumps the target's
// write version. Every in-place write goes through here.
void note_in_place_write(const char* op, const NDArray& target, const NDArray* source = nullptr);
// Tells the modes about an op without an OpCall form (they may refuse it).
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
