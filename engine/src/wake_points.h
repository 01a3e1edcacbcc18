// Wake points: the steps of CpuExecutor's wake-up protocol where a test build may stop a thread
// for a moment, to make the interleavings that could lose a wake-up common.
//
// The protocol (cpu_executor.{h,cc}): a thread that makes an op ready publishes it in a queue,
// then reads whether some worker will see it (an idle drainer, an idle priority lane); a worker
// about to sleep drops its idle or active count, then looks at the queues once more. Each side
// orders its two steps seq_cst (an RMW or a fence), so at least one side sees the other and a
// ready op is never left in a queue while every worker that could run it sleeps. A mistake
// there (a step in the wrong order, a missing re-check) shows only when a thread is delayed
// between two steps, which on a real machine happens once in millions of hand-offs. ThreadSanitizer
// cannot see it either: a lost wake-up is not a data race (and GCC's TSan does not model
// atomic_thread_fence at all).
//
// So tests/engine/wake_protocol_test.cc compiles its own copy of cpu_executor.cc with
// TANDEM_WAKE_POINTS defined, where each TANDEM_WAKE_POINT(name) calls the test's at_wake_point
// (a yield, a spin, a short sleep or nothing, at random), and runs millions of hand-offs under a
// watchdog that fails on any op left waiting. In the engine library the macro is empty: the
// library's code is what it was without the points (the disassembly of cpu_executor.o differs
// only in two swapped spill slots). The points live in cpu_executor.cc and in ReadyFifo, which
// that file alone uses, so the test's copy is the only code that differs.
#pragma once

#include <cstdint>
#include <string>

namespace tandem::detail {

enum class WakePoint : std::uint8_t {
  // submit(): the op is in its queue (the FIFO's tail exchanged, or the priority queue's
  // mutex released), and the submitter has not yet read the idle counts.
  submit_published,
  // ReadyFifo::push: the tail is exchanged but the op not yet linked (pop sees an empty queue).
  fifo_linking,
  // wake_lane(): the epoch is bumped, the lane not yet notified.
  lane_epoch_bumped,
  // wake_drainer(): a drainer is counted active, its TBB task not yet enqueued.
  drainer_counted,
  // drain(): the drainer has counted itself idle (first empty poll of an idle streak).
  drainer_idle,
  // drain(): the drainer has taken an op after an idle streak; it still counts as idle (so
  // pushes wake no one).
  drainer_took_op,
  // drain(): the same drainer has dropped its idle count; it has not yet looked whether it
  // leaves ops behind.
  drainer_busy_again,
  // drain(): the drainer stops polling and has not yet dropped its idle count.
  drainer_stops_polling,
  // drain(): the idle count is dropped, the active count not yet.
  drainer_between_counts,
  // drain(): both counts are dropped and fenced; the queues not yet re-checked.
  drainer_before_recheck,
  // drain(): the drainer has decided to return to TBB (park).
  drainer_parks,
  // next_op(): an urgent op goes first, so the successor went back to the FIFO; the drainer has
  // not yet woken another for it.
  successor_requeued,
  // priority_lane(): the lane took an op and dropped its idle count; it has not yet looked for
  // copies left behind.
  lane_busy,
  // priority_lane(): the lane read the epoch and found no op; it has not yet spun or parked.
  lane_before_park,
  count,
};

#if defined(TANDEM_WAKE_POINTS)
// Defined by the test that compiles cpu_executor.cc with the points.
void at_wake_point(WakePoint point) noexcept;
// The counts and queues of the newest CpuExecutor, as text: what a lost wake-up left behind.
std::string describe_cpu_executor();
#define TANDEM_WAKE_POINT(name) ::tandem::detail::at_wake_point(::tandem::detail::WakePoint::name)
#else
#define TANDEM_WAKE_POINT(name) static_cast<void>(0)
#endif

}  // namespace tandem::detail
