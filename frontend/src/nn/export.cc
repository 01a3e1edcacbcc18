// export_block: trace one predict-mode forward (op_trace.h), write the graph as JSON and the
// parameters and constants with nd::save.
#include "tandem/nn/export.h"

#include <nlohmann/json.hpp>

#include "graph/graph_json.h"
#include "graph/op_trace.h"
#include "graph/op_trace_graph.h"
#include "io/file_bytes.h"
#include "nn/graph_format.h"
#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/save_load.h"

namespace tandem::nn {

namespace {

using nlohmann::json;

const char* grad_req_name(GradReq request) {
  switch (request) {
    case GradReq::write:
      return "write";
    case GradReq::add:
      return "add";
    case GradReq::null:
      return "null";
  }
  return "write";
}

json value_json(const std::string& name, int id, const nd::NDArray& value) {
  return json{{"name", name},
              {"id", id},
              {"shape", nd::detail::shape_to_json(value.shape())},
              {"dtype", nd::dtype_name(value.dtype())}};
}

// Deferred shapes come from one ordinary forward: under the trace, creating the parameters
// would be traced as random draws.
void make_parameters_ready(Block& block, const nd::NDArray& example) {
  bool deferred = false;
  for (const auto& [name, parameter] : block.collect_params()) {
    if (parameter->deferred()) deferred = true;
  }
  if (deferred) {
    const auto predict = autograd::pause(false);
    (void)block(example);
  }
  for (const auto& [name, parameter] : block.collect_params()) {
    if (!parameter->initialized()) {
      throw Error("tandem: export_block: the parameter '" + name +
                  "' is not initialized; call initialize() (and a forward) first");
    }
    if (name.rfind(nd::detail::kConstantPrefix, 0) == 0) {
      throw Error("tandem: export_block: the parameter name '" + name + "' starts with '" +
                  nd::detail::kConstantPrefix + "', which the params file reserves for constants");
    }
  }
}

}  // namespace

ExportedFiles export_block(Block& block, const nd::NDArray& example_input,
                           const std::string& path_prefix) {
  if (!example_input.defined()) throw Error("tandem: export_block: the example input is null");
  make_parameters_ready(block, example_input);
  const ParameterDict params = block.collect_params();

  nd::detail::OpTrace trace;
  trace.add_input(example_input);
  for (const auto& [name, parameter] : params) {
    trace.add_parameter(name, parameter->data(example_input.device()));
  }
  {
    const auto predict = autograd::pause(false);  // not recording, predict mode
    const nd::detail::TraceScope scope(trace);
    trace.set_output(block(example_input));
  }
  const nd::detail::OpTrace::Graph& graph = trace.graph();

  nd::NamedArrays saved;
  json parameters = json::array();
  for (const auto& [name, id] : graph.parameters) {
    const nd::NDArray& value = graph.values[static_cast<std::size_t>(id)];
    json entry = value_json(name, id, value);
    entry["grad_req"] = grad_req_name(params[name].grad_req());
    parameters.push_back(std::move(entry));
    saved.emplace_back(name, value);
  }
  json constants = json::array();
  for (std::size_t i = 0; i < graph.constants.size(); ++i) {
    const int id = graph.constants[i];
    const nd::NDArray& value = graph.values[static_cast<std::size_t>(id)];
    constants.push_back(value_json(nd::detail::constant_name(i), id, value));
    saved.emplace_back(nd::detail::constant_name(i), value);
  }
  const nd::NDArray& input = graph.values[static_cast<std::size_t>(graph.input)];
  const json document{{"format", detail::kGraphFormatName},
                      {"version", detail::kGraphFormatVersion},
                      {"tandem_version", detail::tandem_version()},
                      {"input",
                       {{"id", graph.input},
                        {"shape", nd::detail::shape_to_json(input.shape())},
                        {"dtype", nd::dtype_name(input.dtype())}}},
                      {"parameters", std::move(parameters)},
                      {"constants", std::move(constants)},
                      {"nodes", graph.nodes},
                      {"outputs", graph.outputs}};

  ExportedFiles files{path_prefix + "-graph.json", path_prefix + "-params.tnd"};
  const std::string text = document.dump(1) + "\n";
  nd::detail::write_file_bytes("export_block", files.graph,
                               std::vector<unsigned char>(text.begin(), text.end()));
  nd::save(files.params, saved);
  return files;
}

}  // namespace tandem::nn
