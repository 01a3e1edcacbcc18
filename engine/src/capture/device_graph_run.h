// DeviceGraphRun: a run of accelerator ops of a captured window (captured_graph.h) that every
// replay enters as ONE engine op, whose launch function launches the run's device graph
// (tandem/accel/device_graph.h): recorded from the ops' launch functions on the first replay,
// launched as one unit on every later one.
//
// The rule: which accelerator ops of a window join one device graph. Ops i..j (j > i) of the
// window form a run when
// - they are consecutive in capture order (no other op of the window between them);
// - each is an accelerator op (not cpu) on the same device and queue, with neither
//   `async_completion` (its work ends through a Completion, not through its stream) nor
//   `no_skip` (it must run after a failure upstream, which a graph launch behind a failed wait
//   would skip);
// - each op after the first reads a var the op before it writes (a dependency chain: every op
//   of the run is downstream of every earlier one);
// - every var the run writes that anything outside the run can see (all but the graph's
//   temporaries used by the run alone) is written last by the run's last op.
// The last two make the one unit exactly as good as separate pushes for errors: a failure (or
// a poisoned input) at any op of the run skips every later op of the run and poisons every
// visible var the run writes, with the same error that separate pushes would leave there.
//
// A window that fails as one unit (CaptureOptions::fail_as_one_unit; RunRule::whole_run) drops
// the last two conditions: a run is then the longest sequence of consecutive accelerator ops of
// one device and queue, none async_completion nor no_skip, whatever their dependencies (the
// forward, backward and updates of a training step). Its unit is what makes that safe: it reads
// every var the run reads before writing it and writes every var the run writes, so a failure
// or a poisoned input anywhere in the run poisons every visible var the run writes (all or
// nothing), not only those downstream of the failure as separate pushes would. The run's ops
// run in capture order on one stream (on cuda, one stream's capture): ops that were independent
// are then serialised inside the graph.
//
// The run's unit holds what its ops hold: a var is read (reads_value) when an op of the run
// reads it before any op of the run writes it, written when an op writes it; plus the graph's
// own var, written, so that two replays of the graph launch one after the other.
//
// The launch: the unit's launch function runs on the device's launcher thread, with the stream
// the engine chose. First replay: the stream captures while the run's launch functions run
// (each sees that stream as ctx.stream()), then the graph is launched. Later replays only launch
// it. When the stream cannot capture, or the capture throws (a launch function that waits,
// records or synchronizes, a cuda host item, or any other exception), the capture is dropped and
// the run's launch functions run directly on the stream, this time and at every later replay
// (still one engine op per run); a launch function that failed during the capture is thus
// called a second time, and its error is the unit's.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tandem/accel/device_graph.h"
#include "tandem/detail/op_record.h"
#include "tandem/run_context.h"

namespace tandem::detail {

struct DeviceGraphRun {
  std::uint32_t first_node = 0;  // the run is nodes[first_node, first_node + size)
  std::uint32_t size = 0;
  // Recorded by the first replay; only the launch function of the run's unit touches these,
  // and the units of one graph never launch at once (they write the graph's var).
  std::unique_ptr<DeviceGraph> graph;
  bool direct = false;  // no graph: the launch functions run directly at each replay
};

// Which runs a window's device graphs may be: chains only (the errors of separate pushes), or
// any run of consecutive accelerator ops (a window that fails as one unit).
enum class RunRule { chain, whole_run };

// How many ops from nodes[first] on form a device graph run under `rule` (0 or 1: none).
// `owned`: the temporaries the graph owns; `uses`: for each var, how many of the window's ops
// touch it (both read by the chain rule only).
std::uint32_t device_graph_run_length(const std::vector<OpRecord*>& nodes, std::uint32_t first,
                                      RunRule rule, const std::unordered_set<VarState*>& owned,
                                      const std::unordered_map<VarState*, std::uint32_t>& uses);

// The unit's launch function: capture (first time) and launch, or run directly.
void launch_device_graph_run(DeviceGraphRun& run, OpRecord* const* nodes, RunContext& ctx);

}  // namespace tandem::detail
