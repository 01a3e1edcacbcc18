// Which of its two states this VM's cores were in during a round, from the core-to-core
// latency measured right after it (core_to_core.h): near (26-50 ns on the development VM) or
// far (120-250 ns, for stretches of minutes: where the hypervisor runs the vCPUs at the time).
// Every system slows down when the cores are far, and not by the same factor: one that moves
// more cache lines between cores per op slows more. So a side-by-side ratio is taken over the
// rounds in which both systems ran in the same state, and reported per state, beside the plain
// ratio of medians (docs/benchmarks.md, "Sixth pass").
#pragma once

#include <cstddef>
#include <optional>

#include "side_by_side.h"

namespace tandem::bench {

enum class CoreState { near, far, unknown };

// Between the two states: nothing was measured in between on the development VM.
inline constexpr double kNearCoresMaxNs = 80.0;

// `core_to_core_ns` NaN (not measured): unknown.
CoreState core_state(double core_to_core_ns);

struct StateRatio {
  std::optional<double> ratio;  // empty when no round qualified
  std::size_t rounds = 0;       // rounds in which both ran in the state
};

// median(a's samples) / median(b's samples) over the rounds in which both a and b ran with the
// cores in `state` (round i of a and round i of b ran one after the other).
StateRatio ratio_in_state(const Timing& a, const Timing& b, CoreState state);

}  // namespace tandem::bench
