// The op trace: while nn::export_block runs a block's forward, the trace is the export mode of
// the calling thread's mode stack (core/modes.h): each front-end op reports itself to it (op
// name, attributes, input and output arrays), so that the graph can be written as JSON and run
// again without the block's C++ code (tandem/nn/export.h).
//
// Every op has a record (core/op_definition.h): it becomes a node named after its record, with
// the attributes the record writes; detail::invoke hides the modes from the ops it is made of
// (its dense copies, its steps). No op is named here. Ops a graph cannot hold (random draws,
// in-place writes, autograd::record_op) are refused: the trace throws tandem::Error naming the
// op.
#pragma once

#include <memory>
#include <string>

#include "core/modes.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

class OpTrace final : public Mode {
 public:
  OpTrace();
  ~OpTrace();
  OpTrace(const OpTrace&) = delete;
  OpTrace& operator=(const OpTrace&) = delete;

  // The mode's events: an op becomes a node; an in-place write or an op without a form is
  // refused.
  void op(const OpCall& call) override;
  void in_place_write(const char* op, const NDArray& target, const NDArray* source) override;
  void opaque_op(const std::string& op, const std::string& why) override;

  // The graph's input and parameters, known before the forward runs; ids in call order.
  void add_input(const NDArray& x);
  void add_parameter(const std::string& name, const NDArray& value);

  // Throws tandem::Error: `op` cannot be part of an exported graph, because `why`.
  [[noreturn]] void refuse(const std::string& op, const std::string& why) const;

  // What the forward returned (an input, a parameter, a constant or a node's output).
  void set_output(const NDArray& out);

  // What was recorded (op_trace_graph.h): the export writes it out.
  struct Graph;
  const Graph& graph() const { return *graph_; }

 private:
  std::unique_ptr<Graph> graph_;
};

// Makes `trace` the calling thread's export mode for its lifetime.
class TraceScope {
 public:
  explicit TraceScope(OpTrace& trace) : scope_(&trace) {}

 private:
  ModeScope scope_;
};

}  // namespace tandem::nd::detail
