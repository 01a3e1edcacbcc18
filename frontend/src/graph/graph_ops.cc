#include "graph/graph_ops.h"

#include <span>
#include <unordered_map>

#include "core/op_definition.h"
#include "graph/graph_json.h"
#include "tandem/errors.h"

// The files whose records (core/op_definition.h) a graph may name: core/views.cc (views and
// copies), ops/elementwise_records.cc (the element-wise rows) and every op file of ops/. Each
// defines op_definitions_<file>() (TANDEM_OP_DEFINITIONS). Naming the file here also makes a
// program linking the static library link it, so an imported graph finds every op.
// clang-format off
#define TANDEM_OP_FILES(X)                                                                  \
  X(views) X(convolution) X(creation) X(elementwise) X(elementwise_rows) X(join) X(linalg) \
  X(network) X(pooling) X(random) X(reduce)
// clang-format on

namespace tandem::nd::detail {

#define TANDEM_DECLARE_OP_FILE(file) std::span<const OpDefinition* const> op_definitions_##file();
TANDEM_OP_FILES(TANDEM_DECLARE_OP_FILE)
#undef TANDEM_DECLARE_OP_FILE

namespace {

using nlohmann::json;
using Table = std::unordered_map<std::string, GraphOp>;

// Every op's record: its import, with its attributes read from the node.
Table make_table() {
  Table table;
  for (const OpDefinition* definition : all_op_definitions()) {
    table[definition->name] = {definition->num_inputs,
                               [definition](const json& attrs, const std::vector<NDArray>& in) {
                                 return definition->import(JsonAttrReader(attrs), in);
                               }};
  }
  return table;
}

}  // namespace

std::vector<const OpDefinition*> all_op_definitions() {
  std::vector<const OpDefinition*> all;
  const auto add = [&](std::span<const OpDefinition* const> definitions) {
    all.insert(all.end(), definitions.begin(), definitions.end());
  };
#define TANDEM_ADD_OP_FILE(file) add(op_definitions_##file());
  TANDEM_OP_FILES(TANDEM_ADD_OP_FILE)
#undef TANDEM_ADD_OP_FILE
  return all;
}

const GraphOp* find_graph_op(const std::string& name) {
  static const Table table = make_table();
  const auto found = table.find(name);
  return found == table.end() ? nullptr : &found->second;
}

}  // namespace tandem::nd::detail
