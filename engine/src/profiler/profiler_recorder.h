// The profiler's recording side, called by the engines. Everything here is a no-op unless the
// profiler is on; `enabled()` is one relaxed load, so a disabled profiler costs nothing
// measurable on the hot path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "tandem/detail/op_record.h"
#include "tandem/launch_counters.h"
#include "var_state.h"

namespace tandem::detail::profiling {

// Hidden: the hot path then reads it directly, not through the GOT, in a -fPIC build.
extern std::atomic<bool> g_enabled __attribute__((visibility("hidden")));

// The hooks can be compiled out (CMake -DTANDEM_PROFILER_HOOKS=OFF): a build that exists only
// to measure what the hooks cost while the profiler is off (bench/profiler_off_cost.sh). In it
// the profiler records nothing.
#ifndef TANDEM_PROFILER_HOOKS
#define TANDEM_PROFILER_HOOKS 1
#endif
inline constexpr bool kHooksCompiled = TANDEM_PROFILER_HOOKS != 0;

inline bool enabled() {
  return kHooksCompiled && g_enabled.load(std::memory_order_relaxed);
}

// Whether `op` is being recorded (it was pushed while the profiler was on).
inline bool profiled(const OpRecord* op) {
  return kHooksCompiled && op->profile_id != 0;
}

// profiled(op) || op->stream != nullptr, in one test (EngineCore::finish).
inline bool profiled_or_on_stream(const OpRecord* op) {
  if constexpr (kHooksCompiled) {
    return (op->profile_id | reinterpret_cast<std::uintptr_t>(op->stream)) != 0;
  } else {
    return op->stream != nullptr;
  }
}

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The hooks below run only for profiled ops. They are out of line and marked cold, so that the
// engine's hot path holds a test and a not-taken branch per hook and nothing else: no inlined
// loop that would take registers from the code around it.

// At push: gives the op an id and its push time.
[[gnu::cold]] void on_push(OpRecord* op);
// At enqueue, with the op's vars held (locked, or the naive engine's turn): records the data
// dependencies of the op in push order (on the last writer of each var it touches, up to 4),
// whatever the timing, and makes the op the last writer of what it writes.
[[gnu::cold]] void on_enqueue(OpRecord* op);
// When the op's last var is granted, and when it starts: its ready and start times.
[[gnu::cold]] void on_ready(OpRecord* op);
[[gnu::cold]] void on_start(OpRecord* op);
// After the op's body, on the thread that ran it, with this thread's launch counters from
// before the body: what the body launched and allocated (tandem/launch_counters.h). Kept for
// the op's event, which is made on the same thread when the op finishes at the end of its body
// (CPU ops, and accelerator ops at launch); an async op finished from elsewhere shows zeros.
[[gnu::cold]] void on_body_end(const OpRecord* op, LaunchCounts before);
// At finish: stores the op's event (end time = now) in this thread's buffer.
[[gnu::cold]] void on_finish(OpRecord* op, const std::string& lane, bool skipped, bool failed);
// At finish of an accelerator op (at launch): the same, with the device-side start and end
// taken later from the op's timing events (`start_event`, `end_event`: when the stream reached
// them). They are resolved when the events are read (profiler::events), waiting for the device
// if needed; without them the host times of the launch stay.
[[gnu::cold]] void on_finish_device(OpRecord* op, const std::string& lane, bool skipped,
                                    bool failed);

}  // namespace tandem::detail::profiling
