// ImportedBlock: the graph JSON read and checked once into a Program (values by id, nodes with
// their ops looked up), then interpreted by forward.
#include "tandem/nn/imported_block.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "graph/graph_json.h"
#include "graph/graph_ops.h"
#include "graph/op_trace_graph.h"
#include "io/file_bytes.h"
#include "nn/graph_format.h"
#include "tandem/errors.h"
#include "tandem/nd/save_load.h"
#include "tandem/nn/initializer.h"

namespace tandem::nn {

namespace detail {

std::string tandem_version() {
  return TANDEM_VERSION_STRING;
}

}  // namespace detail

namespace {

using nlohmann::json;

struct ProgramNode {
  std::string op;
  const nd::detail::GraphOp* run = nullptr;
  json attrs;
  std::vector<int> inputs;
  int output = -1;
};

struct NamedValue {
  std::string name;
  int id = -1;
  nd::Shape shape;
  nd::DType dtype = nd::float32;
  GradReq grad_req = GradReq::write;
};

GradReq grad_req_from_json(const json& value, const std::string& what) {
  for (GradReq request : {GradReq::write, GradReq::add, GradReq::null}) {
    const char* name = request == GradReq::write ? "write"
                       : request == GradReq::add ? "add"
                                                 : "null";
    if (value == name) return request;
  }
  throw Error("tandem: " + what + ": expected a grad_req (write, add or null), got " +
              nd::detail::json_excerpt(value));
}

// The child block a dotted parameter name implies: it holds parameters (and such children) only.
class ParameterScope final : public Block {
 public:
  nd::NDArray forward(const nd::NDArray&) override {
    throw Error("tandem: ImportedBlock: '" + prefix() +
                "' only holds parameters of the imported graph; call the ImportedBlock itself");
  }

  std::shared_ptr<Parameter> add(const std::string& name, nd::Shape shape,
                                 ParameterOptions options) {
    const std::size_t dot = name.find('.');
    if (dot == std::string::npos) return register_parameter(name, shape, std::move(options));
    return child(name.substr(0, dot))->add(name.substr(dot + 1), shape, std::move(options));
  }

  template <class Owner>
  static std::shared_ptr<ParameterScope> child_of(Owner& owner, const std::string& name) {
    for (const auto& [child_name, child] : owner.children()) {
      if (child_name == name) return std::dynamic_pointer_cast<ParameterScope>(child);
    }
    return nullptr;
  }

 private:
  std::shared_ptr<ParameterScope> child(const std::string& name) {
    if (auto existing = child_of(*this, name)) return existing;
    return register_child(name, ParameterScope());
  }
};

}  // namespace

struct ImportedBlock::Program {
  std::string graph_path;
  nd::Shape input_shape;
  nd::DType input_dtype = nd::float32;
  int input_id = -1;
  std::size_t num_values = 0;
  std::vector<std::pair<int, std::shared_ptr<Parameter>>> parameters;  // id, parameter
  std::vector<std::pair<int, nd::NDArray>> constants;                  // id, value
  std::vector<ProgramNode> nodes;
  int output_id = -1;
};

namespace {

// Reads the graph file into a Program (no arrays yet); every error names the file.
class GraphReader {
 public:
  explicit GraphReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("tandem: ImportedBlock::load: '" + path_ + "': " + what);
  }

  json parse() const {
    const std::vector<unsigned char> bytes =
        nd::detail::read_file_bytes("ImportedBlock::load", path_);
    json document = nd::detail::parse_json(bytes, "ImportedBlock::load: '" + path_ + "'");
    if (document.is_discarded() || !document.is_object()) fail("is not a JSON object");
    const json format = document.value("format", json());
    if (format != detail::kGraphFormatName) {
      fail("is not a tandem graph (format " + nd::detail::json_excerpt(format) + ", expected \"" +
           detail::kGraphFormatName + "\")");
    }
    const json version = document.value("version", json());
    if (version != detail::kGraphFormatVersion) {
      fail("has graph format version " + nd::detail::json_excerpt(version) +
           " (written by tandem " +
           nd::detail::json_excerpt(document.value("tandem_version", json("?"))) +
           "); this build (tandem " + detail::tandem_version() + ") reads version " +
           std::to_string(detail::kGraphFormatVersion) + " only: export the block again");
    }
    return document;
  }

  // A new value id (defined once, within range).
  int define(const json& value, const std::string& what) {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<std::uint64_t>() > 1'000'000'000) ||
        value.get<std::int64_t>() < 0 || value.get<std::int64_t>() > 1'000'000'000) {
      fail(what + " has an invalid id " + nd::detail::json_excerpt(value));
    }
    const int id = value.get<int>();
    if (!defined_.insert(id).second)
      fail(what + " defines the id " + std::to_string(id) + " twice");
    max_id_ = std::max(max_id_, id);
    return id;
  }
  int use(const json& value, const std::string& what) const {
    // Range-checked before narrowing: 4294967297 must not read as id 1.
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<std::uint64_t>() > 1'000'000'000) ||
        value.get<std::int64_t>() < 0 || value.get<std::int64_t>() > 1'000'000'000 ||
        !defined_.contains(static_cast<int>(value.get<std::int64_t>()))) {
      fail(what + " reads the id " + nd::detail::json_excerpt(value) +
           ", which no earlier entry defines");
    }
    return static_cast<int>(value.get<std::int64_t>());
  }

  NamedValue named_value(const json& entry, const std::string& what) {
    NamedValue value;
    if (!entry.is_object() || !entry.contains("name") || !entry.at("name").is_string()) {
      fail(what + " has no name");
    }
    value.name = entry.at("name").get<std::string>();
    const std::string described = what + " '" + value.name + "'";
    value.id = define(entry.value("id", json()), described);
    value.shape =
        nd::detail::shape_from_json(entry.value("shape", json()), path_ + ": " + described);
    value.dtype =
        nd::detail::dtype_from_json(entry.value("dtype", json()), path_ + ": " + described);
    if (entry.contains("grad_req")) {
      value.grad_req = grad_req_from_json(entry.at("grad_req"), path_ + ": " + described);
    }
    return value;
  }

  ProgramNode node(const json& entry, std::size_t index) {
    const std::string what = "node " + std::to_string(index);
    if (!entry.is_object() || !entry.contains("op") || !entry.at("op").is_string()) {
      fail(what + " has no op name");
    }
    ProgramNode node;
    node.op = entry.at("op").get<std::string>();
    node.run = nd::detail::find_graph_op(node.op);
    if (node.run == nullptr) {
      fail("op '" + node.op + "' (" + what + ") is not known to this build (tandem " +
           detail::tandem_version() + ")");
    }
    const std::string described = what + " (" + node.op + ")";
    node.attrs = entry.value("attrs", json::object());
    const json inputs = entry.value("inputs", json());
    if (!inputs.is_array()) fail(described + " has no list of inputs");
    for (const json& input : inputs) node.inputs.push_back(use(input, described));
    if (node.run->num_inputs >= 0 &&
        node.inputs.size() != static_cast<std::size_t>(node.run->num_inputs)) {
      fail(described + " has " + std::to_string(node.inputs.size()) + " inputs; the op takes " +
           std::to_string(node.run->num_inputs));
    }
    const json outputs = entry.value("outputs", json());
    if (!outputs.is_array() || outputs.size() != 1 || !outputs[0].is_object()) {
      fail(described + " must have exactly one output");
    }
    node.output = define(outputs[0].value("id", json()), described);
    return node;
  }

  std::size_t num_values() const { return static_cast<std::size_t>(max_id_ + 1); }

 private:
  std::string path_;
  std::set<int> defined_;
  int max_id_ = -1;
};

json member(const GraphReader& reader, const json& document, const char* key, json::value_t type) {
  if (!document.contains(key) || document.at(key).type() != type) {
    reader.fail(std::string("has no valid \"") + key + "\" entry");
  }
  return document.at(key);
}

// The params file's arrays, checked against what the graph expects (name, shape, dtype), with
// nothing missing and nothing extra.
nd::NamedArrays load_checked(const std::string& params_path, const std::string& graph_path,
                             const std::vector<NamedValue>& expected, Device device) {
  nd::NamedArrays loaded = nd::load(params_path, device);
  const auto fail = [&](const std::string& what) {
    throw Error("tandem: ImportedBlock::load: '" + params_path + "' does not fit '" + graph_path +
                "': " + what);
  };
  std::set<std::string> expected_names;
  for (const NamedValue& value : expected) {
    expected_names.insert(value.name);
    const auto found = std::find_if(loaded.begin(), loaded.end(),
                                    [&](const auto& entry) { return entry.first == value.name; });
    if (found == loaded.end()) fail("the parameter '" + value.name + "' is missing");
    const nd::NDArray& array = found->second;
    if (array.shape() != value.shape || array.dtype() != value.dtype) {
      fail("the parameter '" + value.name + "' has shape " + array.shape().to_string() + " " +
           nd::dtype_name(array.dtype()) + " in the params file, but the graph expects " +
           value.shape.to_string() + " " + nd::dtype_name(value.dtype));
    }
  }
  for (const auto& [name, array] : loaded) {
    if (!expected_names.contains(name)) {
      fail("the params file has the extra array '" + name + "' (shape " +
           array.shape().to_string() + "), which the graph does not name");
    }
  }
  return loaded;
}

}  // namespace

ImportedBlock::ImportedBlock(std::unique_ptr<Program> program) : program_(std::move(program)) {}
ImportedBlock::~ImportedBlock() = default;
ImportedBlock::ImportedBlock(ImportedBlock&&) noexcept = default;
ImportedBlock& ImportedBlock::operator=(ImportedBlock&&) noexcept = default;

std::shared_ptr<Parameter> ImportedBlock::add_parameter(const std::string& full_name,
                                                        nd::Shape shape, ParameterOptions options) {
  const std::size_t dot = full_name.find('.');
  if (dot == std::string::npos) return register_parameter(full_name, shape, std::move(options));
  const std::string head = full_name.substr(0, dot);
  std::shared_ptr<ParameterScope> scope = ParameterScope::child_of(*this, head);
  if (!scope) scope = register_child(head, ParameterScope());
  return scope->add(full_name.substr(dot + 1), shape, std::move(options));
}

std::shared_ptr<ImportedBlock> ImportedBlock::load(const std::string& graph_path,
                                                   const std::string& params_path, Device device) {
  GraphReader reader(graph_path);
  const json document = reader.parse();
  auto program = std::make_unique<Program>();
  program->graph_path = graph_path;
  std::vector<NamedValue> parameters, constants;
  try {
    const json input = member(reader, document, "input", json::value_t::object);
    program->input_id = reader.define(input.value("id", json()), "the input");
    program->input_shape =
        nd::detail::shape_from_json(input.value("shape", json()), graph_path + ": the input");
    program->input_dtype =
        nd::detail::dtype_from_json(input.value("dtype", json()), graph_path + ": the input");
    for (const json& entry : member(reader, document, "parameters", json::value_t::array)) {
      parameters.push_back(reader.named_value(entry, "the parameter"));
    }
    for (const json& entry : member(reader, document, "constants", json::value_t::array)) {
      constants.push_back(reader.named_value(entry, "the constant"));
    }
    const json nodes = member(reader, document, "nodes", json::value_t::array);
    for (std::size_t i = 0; i < nodes.size(); ++i)
      program->nodes.push_back(reader.node(nodes[i], i));
    const json outputs = member(reader, document, "outputs", json::value_t::array);
    if (outputs.size() != 1)
      reader.fail("must have exactly one output (a Block returns one array)");
    program->output_id = reader.use(outputs[0], "the output");
  } catch (const json::exception& e) {
    reader.fail(std::string("malformed entry: ") + e.what());
  }
  program->num_values = reader.num_values();

  std::vector<NamedValue> expected = parameters;
  expected.insert(expected.end(), constants.begin(), constants.end());
  const nd::NamedArrays loaded = load_checked(params_path, graph_path, expected, device);

  std::shared_ptr<ImportedBlock> block(new ImportedBlock(std::move(program)));
  Program& p = *block->program_;
  for (const NamedValue& value : parameters) {
    auto parameter =
        block->add_parameter(value.name, value.shape,
                             {.dtype = value.dtype, .grad_req = value.grad_req, .init = nullptr});
    parameter->initialize(Zeros(), {device});
    parameter->set_data(nd::find(loaded, value.name));
    p.parameters.emplace_back(value.id, std::move(parameter));
  }
  for (const NamedValue& value : constants) {
    p.constants.emplace_back(value.id, nd::find(loaded, value.name));
  }
  return block;
}

nd::NDArray ImportedBlock::forward(const nd::NDArray& x) {
  const Program& p = *program_;
  if (!x.defined()) throw Error("tandem: ImportedBlock '" + p.graph_path + "': the input is null");
  bool fits = x.dtype() == p.input_dtype && x.ndim() == p.input_shape.ndim();
  for (int i = 1; fits && i < x.ndim(); ++i) fits = x.shape()[i] == p.input_shape[i];
  if (!fits) {
    throw Error("tandem: ImportedBlock '" + p.graph_path + "': the input has shape " +
                x.shape().to_string() + " " + nd::dtype_name(x.dtype()) +
                ", but the graph was exported for " + p.input_shape.to_string() + " " +
                nd::dtype_name(p.input_dtype) + " (axis 0, the batch, may differ)");
  }
  std::vector<nd::NDArray> values(p.num_values);
  values[static_cast<std::size_t>(p.input_id)] = x;
  for (const auto& [id, parameter] : p.parameters) {
    values[static_cast<std::size_t>(id)] = parameter->data(x.device());
  }
  for (const auto& [id, constant] : p.constants) values[static_cast<std::size_t>(id)] = constant;
  std::vector<nd::NDArray> inputs;
  for (std::size_t index = 0; index < p.nodes.size(); ++index) {
    const ProgramNode& node = p.nodes[index];
    inputs.clear();
    for (int id : node.inputs) inputs.push_back(values[static_cast<std::size_t>(id)]);
    try {
      values[static_cast<std::size_t>(node.output)] = node.run->run(node.attrs, inputs);
    } catch (const json::exception& e) {
      throw Error("tandem: ImportedBlock '" + p.graph_path + "': node " + std::to_string(index) +
                  " (" + node.op + ") has a malformed attribute: " + e.what());
    } catch (const nd::detail::MalformedAttribute& e) {
      throw Error("tandem: ImportedBlock '" + p.graph_path + "': node " + std::to_string(index) +
                  " (" + node.op + ") has a malformed attribute: " + e.what());
    }
  }
  return values[static_cast<std::size_t>(p.output_id)];
}

const nd::Shape& ImportedBlock::input_shape() const {
  return program_->input_shape;
}
nd::DType ImportedBlock::input_dtype() const {
  return program_->input_dtype;
}
std::size_t ImportedBlock::num_nodes() const {
  return program_->nodes.size();
}

}  // namespace tandem::nn
