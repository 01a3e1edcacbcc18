// The op trace (op_trace.h): values are known by their storage and view; a node's inputs that
// the trace has not seen are constants.
#include "graph/op_trace.h"

#include <span>
#include <string>
#include <vector>

#include "core/access.h"
#include "core/checks.h"
#include "graph/graph_json.h"
#include "graph/op_trace_graph.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

std::string constant_name(std::size_t index) {
  return kConstantPrefix + std::to_string(index);
}

using nlohmann::json;

OpTrace::OpTrace() : Mode(ModeKind::trace), graph_(std::make_unique<Graph>()) {}
OpTrace::~OpTrace() = default;

namespace {

int add_value(OpTrace::Graph& graph, const NDArray& array) {
  const int id = static_cast<int>(graph.values.size());
  graph.values.push_back(array);
  graph.ids_by_storage[NDArrayAccess::storage(array).get()].push_back(id);
  return id;
}

// The id of `array`: the latest value with its identity, else a new constant.
int id_of(OpTrace::Graph& graph, const NDArray& array) {
  if (!array.defined()) throw Error("tandem: export: an op read a null array");
  const auto found = graph.ids_by_storage.find(NDArrayAccess::storage(array).get());
  if (found != graph.ids_by_storage.end()) {
    for (auto id = found->second.rbegin(); id != found->second.rend(); ++id) {
      if (same_view(graph.values[static_cast<std::size_t>(*id)], array)) return *id;
    }
  }
  const int id = add_value(graph, array);
  graph.constants.push_back(id);
  return id;
}

void add_node(OpTrace::Graph& graph, const char* op, json attrs,
              std::span<const NDArray* const> inputs, const NDArray& out) {
  json input_ids = json::array();
  for (const NDArray* input : inputs) input_ids.push_back(id_of(graph, *input));
  const int id = add_value(graph, out);
  graph.nodes.push_back(json{{"op", op},
                             {"attrs", std::move(attrs)},
                             {"inputs", std::move(input_ids)},
                             {"outputs", json::array({json{{"id", id},
                                                           {"shape", shape_to_json(out.shape())},
                                                           {"dtype", dtype_name(out.dtype())}}})}});
}

// An op with a record: a node named after it, with the attributes it writes; optional inputs
// left out are not the node's.
void add_defined_node(OpTrace::Graph& graph, const OpCall& c) {
  json attrs = json::object();
  if (c.definition->write_attrs != nullptr) {
    JsonAttrWriter writer(attrs);
    c.definition->write_attrs(c, writer);
  }
  std::vector<const NDArray*> inputs;
  inputs.reserve(c.input_count);
  for (std::size_t i = 0; i < c.input_count; ++i) {
    if (c.inputs[i] != nullptr && c.inputs[i]->defined()) inputs.push_back(c.inputs[i]);
  }
  add_node(graph, c.definition->name, std::move(attrs), inputs, *c.out);
}

}  // namespace

void OpTrace::add_input(const NDArray& x) {
  graph_->input = add_value(*graph_, x);
}

void OpTrace::add_parameter(const std::string& name, const NDArray& value) {
  graph_->parameters.emplace_back(name, add_value(*graph_, value));
}

void OpTrace::op(const OpCall& c) {
  add_defined_node(*graph_, c);
}

void OpTrace::in_place_write(const char* op, const NDArray& /*target*/, const NDArray* /*source*/) {
  refuse(std::string(op) + " (in place)",
         "in-place writes are not traced; compute a new array instead");
}

void OpTrace::opaque_op(const std::string& op, const std::string& why) {
  refuse(op, why);
}

void OpTrace::refuse(const std::string& op, const std::string& why) const {
  throw Error("tandem: export: the op '" + op + "' cannot be exported: " + why + " (node " +
              std::to_string(graph_->nodes.size()) + " of the forward)");
}

void OpTrace::set_output(const NDArray& out) {
  graph_->outputs.push_back(id_of(*graph_, out));
}

}  // namespace tandem::nd::detail
