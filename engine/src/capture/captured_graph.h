// GraphPlan: a captured window of pushes (tandem/graph.h), resolved once at capture so that a
// replay does no per-op dependency work.
//
// The window's ops are split, in capture order, into steps:
// - an inline segment: a maximal run of synchronous CPU ops (device cpu(0), no
//   async_completion). A replay enters it as ONE engine op (the segment's unit) that holds every
//   var the segment touches (reads as reads, anything written as a write) plus the graph's own
//   var; once granted, the unit's GraphRun runs the segment's ops in the worker threads, in the
//   order of a DAG resolved here (predecessor counts and successor lists), with the poison, skip
//   and error rules of separate pushes (graph_replay.cc);
// - a pushed op: an accelerator or async op, pushed again as it was recorded (a thin op that
//   calls the recorded closure), so device streams, fences and Completions work as for any push;
// - a device graph run (device_graph_run.h): consecutive accelerator ops of one device that
//   the rule there admits (a chain, or any run when the window fails as one unit), pushed as
//   ONE op that launches their device graph (unless EngineConfig::device_graphs is off).
//
// Invariants:
// - Steps are entered in capture order, each ordered by the engine against everything pushed
//   before it on its vars: the results are those of pushing the window's ops one by one.
// - Every unit writes `graph_var`, so two units of the same graph never run at once: a node's
//   record (and the segment's statistics) is touched by one replay at a time.
// - Within a segment, a node's predecessors are the ops it must follow on a var in push order
//   (a write follows the earlier write and every read since; a read follows the earlier
//   write): the same edges the var queues would draw.
// - A temporary (made by new_var inside the window and deleted by delete_var inside it) used by
//   one inline segment only is not held by that segment's unit: nothing outside the graph can
//   name it, and units of the graph are ordered by `graph_var`. The graph owns such vars and
//   runs their deleters when it is destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "device_graph_run.h"
#include "tandem/detail/op_record.h"
#include "tandem/engine.h"
#include "tandem/var.h"

namespace tandem::detail {

// A var held by an inline segment's unit, in the address order of its state (the order in
// which push takes var locks).
struct HeldVar {
  Var var;
  bool write = false;
  bool reads_value = false;
};

struct InlineSegment {
  std::uint32_t first_node = 0;  // the segment's nodes are nodes[first_node, first_node + size)
  std::uint32_t size = 0;
  // The DAG, in local indices: predecessor counts, successors in CSR form (successor_begin has
  // size + 1 entries), and the nodes with no predecessor in capture order.
  std::vector<std::uint32_t> predecessors;
  std::vector<std::uint32_t> successor_begin;
  std::vector<std::uint32_t> successors;
  std::vector<std::uint32_t> roots;
  // The most nodes at one depth of the DAG: how many runners the segment can keep busy.
  std::uint32_t max_width = 1;
  int priority = 0;  // the unit's: the highest of its nodes'
  std::vector<HeldVar> held;
  // The cost model (graph_replay.cc): wall time per node of the last replay's first runner, in
  // ns; 0 until the first replay. Helpers are pushed only when nodes are long enough to pay.
  mutable std::atomic<std::uint32_t> ns_per_node{0};
};

// A pushed step: one op, or (device_graph set) the unit of a device graph run, nodes[node,
// node + device_graph->size), whose reads and writes are the unit's (device_graph_run.h).
struct PushedNode {
  std::uint32_t node = 0;
  std::vector<Var> reads, writes;
  std::unique_ptr<DeviceGraphRun> device_graph;
  std::uint32_t size() const { return device_graph ? device_graph->size : 1; }
};

struct GraphStep {
  bool is_inline = false;
  std::uint32_t index = 0;  // into segments or pushed
};

struct GraphPlan {
  GraphPlan() = default;
  GraphPlan(const GraphPlan&) = delete;
  GraphPlan& operator=(const GraphPlan&) = delete;
  // Frees the recorded ops and deletes the vars the graph owns (through Engine::owner, so a
  // graph that outlives its engine deletes them in the stand-in).
  ~GraphPlan();

  Engine* engine = nullptr;
  // The recorded ops in capture order: prepared records (callable, props, device, sorted
  // slots), never queued themselves.
  std::vector<OpRecord*> nodes;
  std::vector<std::unique_ptr<InlineSegment>> segments;
  std::vector<PushedNode> pushed;
  std::vector<GraphStep> steps;
  Var graph_var;
  // Temporaries deleted inside the window, with the deleter their delete_var passed (a record
  // holding the callable, never prepared).
  std::vector<std::pair<Var, OpRecord*>> owned_vars;
  std::size_t external_reads = 0, external_writes = 0, temporaries = 0;
  std::size_t device_graphs = 0, device_graph_ops = 0;
};

// The core of `engine` (engine.cc): every Engine is the facade over one.
class EngineCore;
EngineCore& core_of(Engine& engine);

// Resolves a recorded window (prepared records in capture order; the vars new_var made inside
// it; the temporaries it deleted, with their deleters) into a plan. Takes every record.
// `fail_as_one_unit`: CaptureOptions::fail_as_one_unit (the device graph rule's
// RunRule::whole_run).
std::shared_ptr<GraphPlan> resolve_window(EngineCore& core, Engine& engine,
                                          std::vector<OpRecord*> ops,
                                          const std::unordered_set<VarState*>& created,
                                          std::vector<std::pair<Var, OpRecord*>> deleted,
                                          bool fail_as_one_unit = false);

}  // namespace tandem::detail
