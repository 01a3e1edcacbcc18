// The op trace (op_trace.h): values are known by their storage and view; a node's inputs that
// the trace has not seen are constants.
#include "graph/op_trace.h"

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

namespace {

using nlohmann::json;

json size2d_json(const Size2d& size) {
  return json::array({size.h, size.w});
}

}  // namespace

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
              std::initializer_list<const NDArray*> inputs, const NDArray& out) {
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

void OpTrace::conv2d(const NDArray& x, const NDArray& weight, const NDArray& bias,
                     const Conv2dOptions& options, const NDArray& out) {
  json attrs{{"stride", size2d_json(options.stride)},
             {"padding", size2d_json(options.padding)},
             {"dilation", size2d_json(options.dilation)},
             {"groups", options.groups}};
  if (bias.defined()) {
    add_node(*graph_, "conv2d", std::move(attrs), {&x, &weight, &bias}, out);
  } else {
    add_node(*graph_, "conv2d", std::move(attrs), {&x, &weight}, out);
  }
}

void OpTrace::pool(const char* op, const NDArray& x, const Pool2dOptions& options,
                   const NDArray& out) {
  json attrs = json::object();
  if (std::string(op) != "global_avg_pool2d") {
    attrs = json{{"kernel", size2d_json(options.kernel)},
                 {"stride", size2d_json(options.stride)},
                 {"padding", size2d_json(options.padding)},
                 {"count_include_pad", options.count_include_pad}};
  }
  add_node(*graph_, op, std::move(attrs), {&x}, out);
}

void OpTrace::softmax(const char* op, const NDArray& x, int axis, const NDArray& out) {
  add_node(*graph_, op, json{{"axis", axis}}, {&x}, out);
}

void OpTrace::softmax_cross_entropy(const NDArray& logits, const NDArray& labels,
                                    const NDArray& out) {
  add_node(*graph_, "softmax_cross_entropy", json::object(), {&logits, &labels}, out);
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
    case OpForm::conv2d:
      return conv2d(*c.x, *c.y, *c.z, *c.conv, *c.out);
    case OpForm::pool:
      return pool(c.name, *c.x, *c.pool, *c.out);
    case OpForm::softmax:
      return softmax(c.name, *c.x, *c.axis, *c.out);
    case OpForm::softmax_cross_entropy:
      return softmax_cross_entropy(*c.x, *c.y, *c.out);
    case OpForm::where:
      return where(*c.x, *c.y, *c.z, *c.out);
    case OpForm::untraced:
      // Such an op checks modes_see_each_op() and runs its unfused steps under the trace.
      return refuse(c.name, "it has no graph node (a fused op reached the export trace)");
  }
}

void OpTrace::in_place_write(const char* op, const NDArray& /*target*/, const NDArray* /*source*/) {
  refuse(std::string(op) + " (in place)",
         "in-place writes are not traced; compute a new array instead");
}

void OpTrace::opaque_op(const std::string& op, const std::string& why) {
  refuse(op, why);
}

void OpTrace::where(const NDArray& condition, const NDArray& a, const NDArray& b,
                    const NDArray& out) {
  add_node(*graph_, "where", json::object(), {&condition, &a, &b}, out);
}

void OpTrace::refuse(const std::string& op, const std::string& why) const {
  throw Error("tandem: export: the op '" + op + "' cannot be exported: " + why + " (node " +
              std::to_string(graph_->nodes.size()) + " of the forward)");
}

void OpTrace::set_output(const NDArray& out) {
  graph_->outputs.push_back(id_of(*graph_, out));
}

}  // namespace tandem::nd::detail
