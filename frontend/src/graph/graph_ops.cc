#include "graph/graph_ops.h"

#include <span>
#include <unordered_map>

#include "core/op_definition.h"
#include "core/op_dispatch.h"
#include "graph/graph_json.h"
#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/join.h"
#include "tandem/nd/linalg.h"

// The op files (frontend/src/ops/), whose records (core/op_definition.h) a graph may name: each
// defines op_definitions_<file>() with TANDEM_OP_DEFINITIONS. Naming the file here also makes a
// program linking the static library link it, so an imported graph finds every op.
#define TANDEM_OP_FILES(X) \
  X(convolution)           \
  X(creation) X(elementwise) X(join) X(linalg) X(network) X(pooling) X(random) X(reduce)

namespace tandem::nd::detail {

#define TANDEM_DECLARE_OP_FILE(file) std::span<const OpDefinition* const> op_definitions_##file();
TANDEM_OP_FILES(TANDEM_DECLARE_OP_FILE)
#undef TANDEM_DECLARE_OP_FILE

namespace {

using nlohmann::json;
using Table = std::unordered_map<std::string, GraphOp>;

void add_kind_ops(Table& table) {
  for (int i = 0; i < ops::kUnaryOpCount; ++i) {
    const auto op = static_cast<ops::UnaryOp>(i);
    table[ops::op_name(op)] = {
        1, [op](const json&, const std::vector<NDArray>& in) { return unary_op(op, in[0]); }};
  }
  for (int i = 0; i < ops::kBinaryOpCount; ++i) {
    const auto op = static_cast<ops::BinaryOp>(i);
    table[ops::op_name(op)] = {2, [op](const json&, const std::vector<NDArray>& in) {
                                 return binary_op(op, in[0], in[1]);
                               }};
    table[std::string(ops::op_name(op)) + "_scalar"] = {
        1, [op](const json& attrs, const std::vector<NDArray>& in) {
          return binary_scalar_op(op, in[0], scalar_from_json(attrs.at("scalar"), "scalar"),
                                  attrs.at("scalar_first").get<bool>());
        }};
  }
}

void add_shape_ops(Table& table) {
  table["dot"] = {2, [](const json&, const std::vector<NDArray>& in) { return dot(in[0], in[1]); }};
  table["transpose"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                          return transpose(in[0],
                                           ints_from_json(attrs.at("axes"), "transpose axes"));
                        }};
  // The recorded shape, with axis 0 taken from the input when the traced reshape kept it: a
  // batch of another size flattens as well.
  table["reshape"] = {
      1, [](const json& attrs, const std::vector<NDArray>& in) {
        Shape shape = shape_from_json(attrs.at("shape"), "reshape shape");
        if (attrs.at("keep_axis0").get<bool>() && in[0].ndim() > 0 && shape.ndim() > 0) {
          shape[0] = in[0].shape()[0];
        }
        return in[0].reshape(shape);
      }};
  table["slice"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                      return in[0].slice(integer_from_json(attrs.at("begin"), "slice begin"),
                                         integer_from_json(attrs.at("end"), "slice end"),
                                         integer_from_json(attrs.at("step"), "slice step"));
                    }};
  table["index"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                      return in[0][integer_from_json(attrs.at("index"), "index")];
                    }};
  table["copy"] = {1, [](const json&, const std::vector<NDArray>& in) { return in[0].copy(); }};
  table["astype"] = {1, [](const json& attrs, const std::vector<NDArray>& in) {
                       return in[0].astype(dtype_from_json(attrs.at("dtype"), "astype dtype"));
                     }};
  table["concat"] = {-1, [](const json& attrs, const std::vector<NDArray>& in) {
                       return concat(in, int_from_json(attrs.at("axis"), "concat axis"));
                     }};
}

// Every op with a record: its import, with its attributes read from the node.
void add_defined_ops(Table& table) {
  const auto add = [&](std::span<const OpDefinition* const> definitions) {
    for (const OpDefinition* definition : definitions) {
      table[definition->name] = {definition->num_inputs,
                                 [definition](const json& attrs, const std::vector<NDArray>& in) {
                                   return definition->import(JsonAttrReader(attrs), in);
                                 }};
    }
  };
#define TANDEM_ADD_OP_FILE(file) add(op_definitions_##file());
  TANDEM_OP_FILES(TANDEM_ADD_OP_FILE)
#undef TANDEM_ADD_OP_FILE
}

Table make_table() {
  Table table;
  add_kind_ops(table);
  add_shape_ops(table);
  add_defined_ops(table);
  return table;
}

}  // namespace

const GraphOp* find_graph_op(const std::string& name) {
  static const Table table = make_table();
  const auto found = table.find(name);
  return found == table.end() ? nullptr : &found->second;
}

}  // namespace tandem::nd::detail
