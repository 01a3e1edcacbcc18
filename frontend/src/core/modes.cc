// The mode stack (modes.h).
#include "core/modes.h"

#include <atomic>
#include <string>

#include "core/access.h"
#include "core/invoke.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

constinit thread_local ModeStack mode_stack;

namespace {

constexpr std::uint8_t kObservingBits = mode_bit(ModeKind::trace) | mode_bit(ModeKind::record);

// The modes on, in ModeKind's order.
template <typename Fn>
void for_each_mode(const ModeStack& stack, Fn&& fn) {
  for (Mode* mode : stack.modes)
    if (mode != nullptr) fn(*mode);
}

}  // namespace

Mode* set_mode(ModeKind kind, Mode* mode) noexcept {
  ModeStack& stack = mode_stack;
  Mode*& slot = stack.modes[static_cast<int>(kind)];
  Mode* previous = slot;
  slot = mode;
  const std::uint8_t bit = mode_bit(kind);
  stack.on = static_cast<std::uint8_t>(mode != nullptr ? stack.on | bit : stack.on & ~bit);
  stack.observing = static_cast<std::uint8_t>(stack.on & kObservingBits);
  return previous;
}

ModeScope::ModeScope(Mode* mode) : previous_(nullptr), kind_(ModeKind::trace) {
  if (mode == nullptr) throw Error("tandem: ModeScope: no mode given");
  kind_ = mode->kind();
  previous_ = set_mode(kind_, mode);
}

ModeScope::~ModeScope() {
  set_mode(kind_, previous_);
}

void report_op(const OpCall& call) {
  // A copy: a mode's own ops (a gradient rule's, say) must not see a stack changed under them.
  const ModeStack stack = mode_stack;
  for_each_mode(stack, [&](Mode& mode) { mode.op(call); });
}

bool gradient_wanted(std::span<const NDArray* const> inputs) {
  if (mode_stack.observing == 0) [[likely]]
    return false;
  const ModeStack stack = mode_stack;
  bool wanted = false;
  for_each_mode(stack, [&](const Mode& mode) {
    wanted = wanted || mode.wants_gradient(inputs.data(), inputs.size());
  });
  return wanted;
}

namespace {

OpCall call_of(const OpDefinition& definition, std::span<const NDArray* const> inputs,
               const void* attrs, NDArray& out, const NDArray* kept, const char* name) {
  OpCall call;
  call.definition = &definition;
  call.name = name != nullptr ? name : definition.name;
  call.inputs = inputs.data();
  call.input_count = inputs.size();
  call.attrs = attrs;
  call.out = &out;
  call.kept = kept;
  return call;
}

}  // namespace

void report_call(const OpDefinition& definition, std::span<const NDArray* const> inputs,
                 const void* attrs, NDArray& out, const char* name) {
  if (mode_stack.observing == 0) return;
  report_op(call_of(definition, inputs, attrs, out, nullptr, name));
}

void note_in_place_write(const char* op, const NDArray& target, const NDArray* source) {
  if (!target.defined()) return;
  if (mode_stack.observing != 0) {
    const ModeStack stack = mode_stack;
    for_each_mode(stack, [&](Mode& mode) { mode.in_place_write(op, target, source); });
  }
  NDArrayAccess::storage(target)->write_version.fetch_add(1, std::memory_order_relaxed);
}

void note_opaque_op(const std::string& op, const std::string& why) {
  if (mode_stack.observing == 0) [[likely]]
    return;
  const ModeStack stack = mode_stack;
  for_each_mode(stack, [&](Mode& mode) { mode.opaque_op(op, why); });
}

OpModesPaused::OpModesPaused() : saved_(mode_stack) {
  set_mode(ModeKind::trace, nullptr);
  set_mode(ModeKind::record, nullptr);
}

OpModesPaused::~OpModesPaused() {
  set_mode(ModeKind::trace, saved_.modes[static_cast<int>(ModeKind::trace)]);
  set_mode(ModeKind::record, saved_.modes[static_cast<int>(ModeKind::record)]);
}

void OpModesPaused::report(const OpCall& call) const {
  if (saved_.observing == 0) return;
  const ModeStack stack = saved_;
  for_each_mode(stack, [&](Mode& mode) {
    if ((mode_bit(mode.kind()) & kObservingBits) != 0) mode.op(call);
  });
}

void report_definition(const OpModesPaused& paused, const OpDefinition& definition,
                       std::span<const NDArray* const> inputs, const void* attrs, NDArray& out,
                       const NDArray* kept, const char* name) {
  if (!paused.any()) return;
  paused.report(call_of(definition, inputs, attrs, out, kept, name));
}

void throw_if_capturing(const char* sync_call) {
  if (!capturing_on_this_thread()) [[likely]]
    return;
  throw Error(std::string("tandem: ") + sync_call +
              " inside a hybridized function while it is recorded: the recorded ops have not "
              "run, so there is nothing to wait for or read; a hybridized function must not "
              "read values (wait_to_read, to_vector, scalar, printing, waitall). Read the "
              "outputs after the call, or call the function without hybridize");
}

}  // namespace tandem::nd::detail
