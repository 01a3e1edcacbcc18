// The ops an exported graph may name (docs/file-format.md): node op name -> how to run it on
// the node's input arrays with its attributes, through the same front-end functions the traced
// forward called (so results are bitwise those of the original block).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

struct GraphOp {
  int num_inputs = 1;  // -1: any number (concat); conv2d takes 2 or 3 (checked by its run)
  // Throws tandem::Error (or nlohmann::json::exception for a malformed attribute).
  std::function<NDArray(const nlohmann::json& attrs, const std::vector<NDArray>& inputs)> run;
};

struct OpDefinition;

// Every op's record (core/op_definition.h), element-wise rows included: what the graph import
// reads, and what the tests that follow the records iterate (tests/frontend/op_records_test.cc).
std::vector<const OpDefinition*> all_op_definitions();

// The op called `name`, or null when this build has none.
const GraphOp* find_graph_op(const std::string& name);

}  // namespace tandem::nd::detail
