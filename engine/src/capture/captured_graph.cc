// Resolving a recorded window into a GraphPlan (captured_graph.h), the plan's end, and the
// public CapturedGraph.
#include "captured_graph.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "auto_capture_state.h"
#include "base/logging.h"
#include "engine_core.h"
#include "graph_recorder.h"
#include "tandem/graph.h"

namespace tandem::detail {

namespace {

// Frees a recorded op that will never run again.
void discard_node(OpRecord* op) noexcept {
  op->destroy_callable();
  release_op_record(op);
}

bool runs_inline(const OpRecord* op) {
  return op->device == cpu() && !op->props.async_completion;
}

Var handle_of(VarState* state) {
  return Var(state, state->generation.load(std::memory_order_relaxed));
}

// What the window does with one var: which steps use it, and how.
struct VarUse {
  std::uint32_t steps = 0;        // distinct steps that use it
  std::uint32_t last_step = ~0u;  // the last of them
};

// The DAG of one inline segment over nodes[first, first + size): the edges the var queues would
// draw between its ops (see captured_graph.h).
void resolve_dag(const std::vector<OpRecord*>& nodes, InlineSegment& segment) {
  struct Access {
    std::int64_t last_writer = -1;
    std::vector<std::uint32_t> readers;  // since the last write
  };
  std::unordered_map<VarState*, Access> accesses;
  std::vector<std::vector<std::uint32_t>> successors(segment.size);
  std::vector<std::uint32_t> level(segment.size, 0);
  segment.predecessors.assign(segment.size, 0);
  std::vector<std::uint32_t> depends;
  for (std::uint32_t i = 0; i < segment.size; ++i) {
    const OpRecord* op = nodes[segment.first_node + i];
    segment.priority = std::max(segment.priority, op->props.priority);
    depends.clear();
    for (std::uint32_t s = 0; s < op->num_slots; ++s) {
      const VarSlot& slot = op->slots[s];
      Access& access = accesses[slot.var];
      if (access.last_writer >= 0)
        depends.push_back(static_cast<std::uint32_t>(access.last_writer));
      if (slot.write) {
        depends.insert(depends.end(), access.readers.begin(), access.readers.end());
        access.readers.clear();
        access.last_writer = i;
      } else {
        access.readers.push_back(i);
      }
    }
    std::sort(depends.begin(), depends.end());
    depends.erase(std::unique(depends.begin(), depends.end()), depends.end());
    for (std::uint32_t from : depends) {
      successors[from].push_back(i);
      level[i] = std::max(level[i], level[from] + 1);
    }
    segment.predecessors[i] = static_cast<std::uint32_t>(depends.size());
    if (depends.empty()) segment.roots.push_back(i);
  }
  segment.successor_begin.assign(segment.size + 1, 0);
  for (std::uint32_t i = 0; i < segment.size; ++i) {
    segment.successor_begin[i + 1] =
        segment.successor_begin[i] + static_cast<std::uint32_t>(successors[i].size());
  }
  segment.successors.reserve(segment.successor_begin.back());
  for (const auto& list : successors) {
    segment.successors.insert(segment.successors.end(), list.begin(), list.end());
  }
  std::unordered_map<std::uint32_t, std::uint32_t> width_at;
  for (std::uint32_t depth : level) {
    segment.max_width = std::max(segment.max_width, ++width_at[depth]);
  }
}

}  // namespace

std::shared_ptr<GraphPlan> resolve_window(EngineCore& core, Engine& engine,
                                          std::vector<OpRecord*> ops,
                                          const std::unordered_set<VarState*>& created,
                                          std::vector<std::pair<Var, OpRecord*>> deleted,
                                          bool fail_as_one_unit) {
  auto plan = std::make_shared<GraphPlan>();
  // From here the plan owns every record (its destructor frees them if this throws).
  plan->engine = &engine;
  plan->nodes = std::move(ops);
  plan->owned_vars = std::move(deleted);
  plan->graph_var = core.new_var();

  std::unordered_set<VarState*> owned;
  for (const auto& [var, deleter] : plan->owned_vars) owned.insert(var.state());
  const RunRule rule = fail_as_one_unit ? RunRule::whole_run : RunRule::chain;
  std::unordered_map<VarState*, std::uint32_t> ops_using;  // for the chain rule
  if (core.config().device_graphs && rule == RunRule::chain) {
    for (const OpRecord* op : plan->nodes) {
      for (std::uint32_t s = 0; s < op->num_slots; ++s) ++ops_using[op->slots[s].var];
    }
  }

  // Steps: maximal runs of inline ops, device graph runs, and every other op on its own.
  const auto num_nodes = static_cast<std::uint32_t>(plan->nodes.size());
  for (std::uint32_t i = 0; i < num_nodes;) {
    if (!runs_inline(plan->nodes[i])) {
      PushedNode pushed;
      pushed.node = i;
      const std::uint32_t run_length =
          core.config().device_graphs
              ? device_graph_run_length(plan->nodes, i, rule, owned, ops_using)
              : 0;
      if (run_length >= 2) {
        pushed.device_graph = std::make_unique<DeviceGraphRun>();
        pushed.device_graph->first_node = i;
        pushed.device_graph->size = run_length;
        ++plan->device_graphs;
        plan->device_graph_ops += run_length;
      }
      // The unit's vars (device_graph_run.h): read where read before written in the step.
      std::unordered_set<VarState*> written_in_step;
      for (std::uint32_t n = i; n < i + pushed.size(); ++n) {
        const OpRecord* op = plan->nodes[n];
        for (std::uint32_t s = 0; s < op->num_slots; ++s) {
          const VarSlot& slot = op->slots[s];
          if (slot.reads_value && !written_in_step.contains(slot.var))
            pushed.reads.push_back(handle_of(slot.var));
        }
        for (std::uint32_t s = 0; s < op->num_slots; ++s) {
          const VarSlot& slot = op->slots[s];
          if (slot.write && written_in_step.insert(slot.var).second)
            pushed.writes.push_back(handle_of(slot.var));
        }
      }
      if (pushed.device_graph) pushed.writes.push_back(plan->graph_var);
      i += pushed.size();
      plan->steps.push_back({false, static_cast<std::uint32_t>(plan->pushed.size())});
      plan->pushed.push_back(std::move(pushed));
      continue;
    }
    auto segment = std::make_unique<InlineSegment>();
    segment->first_node = i;
    while (i < num_nodes && runs_inline(plan->nodes[i])) ++i;
    segment->size = i - segment->first_node;
    resolve_dag(plan->nodes, *segment);
    plan->steps.push_back({true, static_cast<std::uint32_t>(plan->segments.size())});
    plan->segments.push_back(std::move(segment));
  }

  // Which steps use each var, to find the temporaries a unit need not hold.
  std::unordered_map<VarState*, VarUse> uses;
  std::unordered_map<VarState*, bool> written;
  for (std::uint32_t step = 0; step < plan->steps.size(); ++step) {
    const GraphStep& s = plan->steps[step];
    const std::uint32_t first =
        s.is_inline ? plan->segments[s.index]->first_node : plan->pushed[s.index].node;
    const std::uint32_t size =
        s.is_inline ? plan->segments[s.index]->size : plan->pushed[s.index].size();
    for (std::uint32_t n = first; n < first + size; ++n) {
      const OpRecord* op = plan->nodes[n];
      for (std::uint32_t k = 0; k < op->num_slots; ++k) {
        VarUse& use = uses[op->slots[k].var];
        if (use.last_step != step) {
          ++use.steps;
          use.last_step = step;
        }
        written[op->slots[k].var] |= op->slots[k].write;
      }
    }
  }
  for (const auto& [state, is_written] : written) {
    if (created.contains(state)) {
      ++plan->temporaries;
    } else if (is_written) {
      ++plan->external_writes;
    } else {
      ++plan->external_reads;
    }
  }

  // Each unit's held vars: everything its nodes touch, but its private temporaries, plus the
  // graph's own var (written), in address order.
  for (std::uint32_t step = 0; step < plan->steps.size(); ++step) {
    if (!plan->steps[step].is_inline) continue;
    InlineSegment& segment = *plan->segments[plan->steps[step].index];
    std::unordered_map<VarState*, HeldVar> held;
    for (std::uint32_t n = segment.first_node; n < segment.first_node + segment.size; ++n) {
      const OpRecord* op = plan->nodes[n];
      for (std::uint32_t k = 0; k < op->num_slots; ++k) {
        const VarSlot& slot = op->slots[k];
        if (owned.contains(slot.var) && uses[slot.var].steps == 1) continue;
        HeldVar& h =
            held.try_emplace(slot.var, HeldVar{handle_of(slot.var), false, false}).first->second;
        h.write |= slot.write;
        h.reads_value |= slot.reads_value;
      }
    }
    held.try_emplace(plan->graph_var.state(), HeldVar{plan->graph_var, true, false});
    for (auto& [state, h] : held) segment.held.push_back(h);
    std::sort(segment.held.begin(), segment.held.end(), [](const HeldVar& a, const HeldVar& b) {
      return std::less<VarState*>()(a.var.state(), b.var.state());
    });
  }
  return plan;
}

GraphPlan::~GraphPlan() {
  for (OpRecord* op : nodes) discard_node(op);
  if (!graph_var.valid()) {
    for (auto& [var, deleter] : owned_vars) discard_node(deleter);
    return;
  }
  try {
    // The graph's vars may have moved to a stand-in if the engine went first.
    Engine& owner = Engine::owner(graph_var);
    for (auto& [var, deleter] : owned_vars) {
      owner.delete_var(var, [deleter = deleter](RunContext& ctx) {
        struct Release {
          OpRecord* op;
          ~Release() { discard_node(op); }
        } release{deleter};
        deleter->run(ctx);
      });
    }
    owner.delete_var(graph_var);
  } catch (const std::exception& e) {
    log().error("a captured graph could not delete its vars: {}", e.what());
  }
}

}  // namespace tandem::detail

namespace tandem {

void CapturedGraph::replay() {
  if (!plan_) return;
  if (detail::tls_graph_recorder != nullptr) {
    throw Error(
        "tandem: CapturedGraph::replay inside a capture: a capture records pushes only; replay "
        "the graph before or after the capture");
  }
  detail::flush_auto_capture(plan_->engine);  // this thread's buffered pushes go first
  detail::core_of(*plan_->engine).replay(plan_);
}

std::size_t CapturedGraph::num_ops() const {
  return plan_ ? plan_->nodes.size() : 0;
}
std::size_t CapturedGraph::num_pushed_ops() const {
  return plan_ ? plan_->pushed.size() - plan_->device_graphs : 0;
}
std::size_t CapturedGraph::num_device_graphs() const {
  return plan_ ? plan_->device_graphs : 0;
}
std::size_t CapturedGraph::num_device_graph_ops() const {
  return plan_ ? plan_->device_graph_ops : 0;
}
std::size_t CapturedGraph::num_segments() const {
  return plan_ ? plan_->segments.size() : 0;
}
std::size_t CapturedGraph::num_external_reads() const {
  return plan_ ? plan_->external_reads : 0;
}
std::size_t CapturedGraph::num_external_writes() const {
  return plan_ ? plan_->external_writes : 0;
}
std::size_t CapturedGraph::num_temporaries() const {
  return plan_ ? plan_->temporaries : 0;
}

}  // namespace tandem
