// What an OpTrace recorded (op_trace.h): the values the graph knows and its nodes in order.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/storage.h"
#include "graph/op_trace.h"

namespace tandem::nd::detail {

struct OpTrace::Graph {
  // Every value by id. The trace holds each array, so that no storage is reused for another
  // array while it lasts: an array is known by its storage and its view (offset, shape,
  // strides, dtype), and two live values never share that identity unless they are equal.
  std::vector<NDArray> values;
  std::map<const Storage*, std::vector<int>> ids_by_storage;
  int input = -1;
  std::vector<std::pair<std::string, int>> parameters;  // by collect_params() name
  std::vector<int> constants;  // read by a node but neither input, parameter nor node output
  // {op, attrs, inputs: [ids], outputs: [{id, shape, dtype}]}, in the order the ops ran.
  nlohmann::json nodes = nlohmann::json::array();
  std::vector<int> outputs;
};

// The reserved name under which the params file holds constant number `index`.
std::string constant_name(std::size_t index);
inline constexpr const char* kConstantPrefix = "__constant.";

}  // namespace tandem::nd::detail
