// The op trace (op_trace.h): values are known by their storage and view; a node's inputs that
// the trace has not seen are constants.
#include "graph/op_trace.h"

#include <iterator>
#include <span>
#include <string>

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

void add_node(OpTrace::Graph& graph, const char* op, json attrs,
              std::initializer_list<const NDArray*> inputs, const NDArray& out) {
  add_node(graph, op, std::move(attrs), std::span<const NDArray* const>(inputs), out);
}

// An op with a record: a node named after it, with the attributes it writes; optional inputs
// left out are not the node's.
void add_defined_node(OpTrace::Graph& graph, const OpCall& c) {
  json attrs = json::object();
  if (c.definition->write_attrs != nullptr) {
    JsonAttrWriter writer(attrs);
    c.definition->write_attrs(c, writer);
  }
  const NDArray* inputs[8];
  std::size_t count = 0;
  for (std::size_t i = 0; i < c.input_count; ++i) {
    if (c.inputs[i] == nullptr || !c.inputs[i]->defined()) continue;
    if (count == std::size(inputs)) throw Error("tandem: export: an op with more than 8 inputs");
    inputs[count++] = c.inputs[i];
  }
  add_node(graph, c.definition->name, std::move(attrs),
           std::span<const NDArray* const>(inputs, count), *c.out);
}

}  // namespace

void OpTrace::add_input(const NDArray& x) {
  graph_->input = add_value(*graph_, x);
}

void OpTrace::add_parameter(const std::string& name, const NDArray& value) {
  graph_->parameters.emplace_back(name, add_value(*graph_, value));
}

void OpTrace::unary(ops::UnaryOp op, const NDArray& x, const NDArray& out) {
  add_node(*graph_, ops::op_name(op), json::object(), {&x}, out);
}

void OpTrace::binary(ops::BinaryOp op, const NDArray& a, const NDArray& b, const NDArray& out) {
  add_node(*graph_, ops::op_name(op), json::object(), {&a, &b}, out);
}

void OpTrace::binary_scalar(ops::BinaryOp op, const NDArray& a, double scalar, bool scalar_first,
                            const NDArray& out) {
  const std::string name = std::string(ops::op_name(op)) + "_scalar";
  add_node(*graph_, name.c_str(),
           json{{"scalar", scalar_to_json(scalar)}, {"scalar_first", scalar_first}}, {&a}, out);
}

void OpTrace::reduce(ops::ReduceOp op, const NDArray& x, std::optional<int> axis, bool keepdims,
                     const NDArray& out) {
  json attrs = json::object();
  if (axis) attrs = json{{"axis", *axis}, {"keepdims", keepdims}};
  add_node(*graph_, ops::op_name(op), std::move(attrs), {&x}, out);
}

void OpTrace::dot(const NDArray& a, const NDArray& b, const NDArray& out) {
  add_node(*graph_, "dot", json::object(), {&a, &b}, out);
}

void OpTrace::transpose(const NDArray& x, const std::vector<int>& axes, const NDArray& out) {
  add_node(*graph_, "transpose", json{{"axes", axes}}, {&x}, out);
}

void OpTrace::reshape(const NDArray& x, const NDArray& out) {
  // A reshape that keeps axis 0 (flatten, Dense's input) keeps it at any batch size.
  const bool keeps_axis0 = x.ndim() > 0 && out.ndim() > 0 && x.shape()[0] == out.shape()[0];
  add_node(*graph_, "reshape",
           json{{"shape", shape_to_json(out.shape())}, {"keep_axis0", keeps_axis0}}, {&x}, out);
}

void OpTrace::slice(const NDArray& x, std::int64_t begin, std::int64_t end, std::int64_t step,
                    const NDArray& out) {
  add_node(*graph_, "slice", json{{"begin", begin}, {"end", end}, {"step", step}}, {&x}, out);
}

void OpTrace::index(const NDArray& x, std::int64_t index, const NDArray& out) {
  add_node(*graph_, "index", json{{"index", index}}, {&x}, out);
}

void OpTrace::copy(const char* op, const NDArray& x, const NDArray& out) {
  if (std::string(op) == "astype") {
    add_node(*graph_, "astype", json{{"dtype", dtype_name(out.dtype())}}, {&x}, out);
    return;
  }
  add_node(*graph_, "copy", json::object(), {&x}, out);
}

void OpTrace::concat(const std::vector<NDArray>& arrays, int axis, const NDArray& out) {
  json input_ids = json::array();
  for (const NDArray& array : arrays) input_ids.push_back(id_of(*graph_, array));
  // add_node takes a fixed list: build the node by hand for the variable one.
  const int id = add_value(*graph_, out);
  graph_->nodes.push_back(
      json{{"op", "concat"},
           {"attrs", json{{"axis", axis}}},
           {"inputs", std::move(input_ids)},
           {"outputs", json::array({json{{"id", id},
                                         {"shape", shape_to_json(out.shape())},
                                         {"dtype", dtype_name(out.dtype())}}})}});
}

void OpTrace::op(const OpCall& c) {
  switch (c.form) {
    case OpForm::unary:
      return unary(c.unary_op, *c.x, *c.out);
    case OpForm::binary:
      return binary(c.binary_op, *c.x, *c.y, *c.out);
    case OpForm::binary_scalar:
      return binary_scalar(c.binary_op, *c.x, c.scalar, c.scalar_first, *c.out);
    case OpForm::reduce:
      return reduce(c.reduce_op, *c.x, c.axis, c.keepdims, *c.out);
    case OpForm::dot:
      return dot(*c.x, *c.y, *c.out);
    case OpForm::transpose:
      return transpose(*c.x, *c.axes, *c.out);
    case OpForm::reshape:
      return reshape(*c.x, *c.out);
    case OpForm::slice:
      return slice(*c.x, c.begin, c.end, c.step, *c.out);
    case OpForm::index:
      return index(*c.x, c.begin, *c.out);
    case OpForm::copy:
      return copy(c.name, *c.x, *c.out);
    case OpForm::concat:
      return concat(*c.arrays, *c.axis, *c.out);
    case OpForm::defined:
      return add_defined_node(*graph_, c);
  }
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
