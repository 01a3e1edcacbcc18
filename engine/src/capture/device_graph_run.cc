// Device graph runs of a captured window (device_graph_run.h): the rule that forms them, and
// the launch function of their unit.
#include "device_graph_run.h"

#include <exception>
#include <string>

#include "base/logging.h"
#include "tandem/accel/stream.h"

namespace tandem::detail {

namespace {

bool may_join(const OpRecord* op) {
  return op->device.kind != DeviceKind::cpu && !op->props.async_completion && !op->props.no_skip;
}

bool writes(const OpRecord* op, const VarState* var) {
  for (std::uint32_t s = 0; s < op->num_slots; ++s) {
    if (op->slots[s].var == var && op->slots[s].write) return true;
  }
  return false;
}

// Whether `op` reads a value `before` wrote.
bool reads_output_of(const OpRecord* op, const OpRecord* before) {
  for (std::uint32_t s = 0; s < op->num_slots; ++s) {
    if (op->slots[s].reads_value && writes(before, op->slots[s].var)) return true;
  }
  return false;
}

// Whether every var nodes[first, first + size) writes that is visible outside the run is
// written last by the run's last op.
bool last_op_writes_what_is_seen(const std::vector<OpRecord*>& nodes, std::uint32_t first,
                                 std::uint32_t size, const std::unordered_set<VarState*>& owned,
                                 const std::unordered_map<VarState*, std::uint32_t>& uses) {
  std::unordered_map<VarState*, std::uint32_t> uses_in_run;
  for (std::uint32_t n = first; n < first + size; ++n) {
    for (std::uint32_t s = 0; s < nodes[n]->num_slots; ++s) ++uses_in_run[nodes[n]->slots[s].var];
  }
  const OpRecord* last = nodes[first + size - 1];
  for (std::uint32_t n = first; n + 1 < first + size; ++n) {
    const OpRecord* op = nodes[n];
    for (std::uint32_t s = 0; s < op->num_slots; ++s) {
      VarState* var = op->slots[s].var;
      if (!op->slots[s].write || writes(last, var)) continue;
      const bool private_to_run = owned.contains(var) && uses.at(var) == uses_in_run[var];
      if (!private_to_run) return false;
    }
  }
  return true;
}

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

void run_launch_functions(const DeviceGraphRun& run, OpRecord* const* nodes, Stream& stream,
                          int worker) {
  for (std::uint32_t n = run.first_node; n < run.first_node + run.size; ++n) {
    OpRecord* node = nodes[n];
    node->stream = &stream;
    node->worker = worker;
    RunContext ctx(node, worker);
    node->run(ctx);
  }
}

}  // namespace

std::uint32_t device_graph_run_length(const std::vector<OpRecord*>& nodes, std::uint32_t first,
                                      RunRule rule, const std::unordered_set<VarState*>& owned,
                                      const std::unordered_map<VarState*, std::uint32_t>& uses) {
  const OpRecord* head = nodes[first];
  if (!may_join(head)) return 0;
  auto size = static_cast<std::uint32_t>(1);
  while (first + size < nodes.size()) {
    const OpRecord* next = nodes[first + size];
    if (!may_join(next) || next->device != head->device || next->props.queue != head->props.queue)
      break;
    if (rule == RunRule::chain && !reads_output_of(next, nodes[first + size - 1])) break;
    ++size;
  }
  // The unit of a whole run writes every var its ops write: a failure poisons them all.
  if (rule == RunRule::whole_run) return size;
  while (size >= 2 && !last_op_writes_what_is_seen(nodes, first, size, owned, uses)) --size;
  return size;
}

void launch_device_graph_run(DeviceGraphRun& run, OpRecord* const* nodes, RunContext& ctx) {
  Stream& stream = *ctx.stream();
  if (run.graph) {
    run.graph->launch(stream);
    return;
  }
  if (!run.direct) {
    if (stream.supports_graph_capture()) {
      try {
        stream.begin_graph_capture();
        try {
          run_launch_functions(run, nodes, stream, ctx.worker());
          run.graph = stream.end_graph_capture();
        } catch (...) {
          stream.abort_graph_capture();
          throw;
        }
      } catch (...) {
        log().debug("tandem: a run of {} ops on {} stays without a device graph: {}", run.size,
                    stream.name(), describe(std::current_exception()));
      }
    }
    if (run.graph) {
      run.graph->launch(stream);
      return;
    }
    run.direct = true;
  }
  run_launch_functions(run, nodes, stream, ctx.worker());
}

}  // namespace tandem::detail
