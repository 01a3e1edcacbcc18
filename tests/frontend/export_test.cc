// nn::export_block and nn::ImportedBlock: an exported network loaded back gives the original
// outputs bit for bit (on every test device, in this process and in a fresh one that does not
// link the network's code), at other batch sizes too; every broken file or unexportable op
// gives a tandem::Error that names what is wrong.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "export_models.h"
#include "frontend_test_util.h"
#include "op_rows.h"
#include "scratch_dir.h"
#include "test_devices.h"

namespace tandem::testing {

namespace {

namespace nn = tandem::nn;
using json = nlohmann::json;

NDArray random_input(Shape shape, Device device, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> values(static_cast<std::size_t>(shape.num_elements()));
  for (float& v : values) v = value(rng);
  return nd::from_vector(values, shape, device);
}

void check_bitwise_equal(const NDArray& actual, const NDArray& expected) {
  REQUIRE(actual.shape() == expected.shape());
  REQUIRE(actual.dtype() == expected.dtype());
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element ", i);
    CHECK(a[i] == e[i]);
  }
}

// Exports `net` with `example`, loads it back on the example's device and compares the
// outputs for the example and for `others` (other batch sizes among them).
void check_round_trip(nn::Block& net, const NDArray& example,
                      const std::vector<NDArray>& others = {}) {
  ScratchDir dir;
  const nn::ExportedFiles files = nn::export_block(net, example, dir.file("model"));
  CHECK(files.graph == dir.file("model-graph.json"));
  CHECK(files.params == dir.file("model-params.tnd"));
  const auto model = nn::ImportedBlock::load(files.graph, files.params, example.device());
  CHECK(model->num_nodes() > 0);
  check_bitwise_equal((*model)(example), net(example));
  for (const NDArray& x : others) check_bitwise_equal((*model)(x), net(x));
}

// A block that runs one function: an element-wise row, for the export of every row.
class FunctionBlock : public nn::Block {
 public:
  explicit FunctionBlock(std::function<NDArray(const NDArray&)> f) : f_(std::move(f)) {}
  NDArray forward(const NDArray& x) override { return f_(x); }

 private:
  std::function<NDArray(const NDArray&)> f_;
};

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_json(const std::string& path, const json& document) {
  std::ofstream(path) << document.dump(1);
}

// An exported MLP, for the error cases.
struct ExportedMlp {
  ScratchDir dir;
  nn::Sequential net = export_models::mlp();
  nn::ExportedFiles files;
  ExportedMlp() {
    net.initialize(nn::Xavier());
    files = nn::export_block(net, random_input({4, 5}, cpu(), 1), dir.file("mlp"));
  }
};

// A forward that uses an op of its own (autograd::record_op), like a user's custom layer.
class CustomOpBlock : public nn::Block {
 public:
  nd::NDArray forward(const nd::NDArray& x) override {
    nd::NDArray y = x * 2.0;
    if (autograd::should_record({&x})) {
      autograd::record_op("my_scale", {x}, {&y}, [](const std::vector<nd::NDArray>& dy) {
        return std::vector<nd::NDArray>{dy[0] * 2.0};
      });
    }
    return y;
  }
};

class RandomBlock : public nn::Block {
 public:
  nd::NDArray forward(const nd::NDArray& x) override {
    return x + nd::random::uniform(x.shape(), x.device());
  }
};

class InPlaceBlock : public nn::Block {
 public:
  nd::NDArray forward(const nd::NDArray& x) override {
    nd::NDArray y = x * 1.0;
    y += 1.0;
    return y;
  }
};

// A block that reads an array of its own (not a parameter): saved as a constant.
class OffsetBlock : public nn::Block {
 public:
  explicit OffsetBlock(Device device)
      : offset_(nd::from_vector(std::vector<float>{0.5f, -1.0f, 2.0f}, {3}, device)) {}
  nd::NDArray forward(const nd::NDArray& x) override {
    return nd::exp(x) + offset_ + nd::sum(x, 1, true);
  }

 private:
  nd::NDArray offset_;
};

// A block whose forward calls a function hybridized with nd::hybridize.
class HybridizedFunctionBlock : public nn::Block {
 public:
  HybridizedFunctionBlock()
      : scale_(nd::hybridize([](const std::vector<nd::NDArray>& in) {
          return std::vector<nd::NDArray>{nd::tanh(in[0] * 2.0) + 1.0};
        })) {}
  nd::NDArray forward(const nd::NDArray& x) override { return scale_({x})[0].copy(); }

 private:
  nd::Hybridized scale_;
};

struct ProcessResult {
  int exit_code = -1;
  std::string output;
};

ProcessResult run_process(const std::string& command) {
  ProcessResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run ", command);
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) {
    result.output += buffer.data();
  }
  const int status = pclose(pipe);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace

TEST_SUITE("frontend.export") {
  TEST_CASE("an exported MLP loaded back gives the original outputs bit for bit on every device") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      nn::Sequential net = export_models::mlp();
      net.initialize(nn::Xavier(), {device});
      check_round_trip(net, random_input({4, 5}, device, 1),
                       {random_input({4, 5}, device, 2), random_input({9, 5}, device, 3),
                        random_input({1, 5}, device, 4)});
    }
  }

  TEST_CASE("an exported conv net with BatchNorm in predict mode gives the original outputs") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      nn::Sequential net = export_models::lenet();
      net.initialize(nn::Xavier(), {device});
      (void)net(random_input({2, 1, 12, 12}, device, 5));  // deferred shapes
      export_models::set_running_statistics(net, device);
      check_round_trip(net, random_input({2, 1, 12, 12}, device, 6),
                       {random_input({5, 1, 12, 12}, device, 7)});
    }
  }

  TEST_CASE("a user's block with a residual add, scalar ops and softmax gives its outputs") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      export_models::Residual net(6);
      net.initialize(nn::Xavier(), {device});
      check_round_trip(net, random_input({3, 6}, device, 8), {random_input({7, 6}, device, 9)});
    }
  }

  TEST_CASE("every element-wise row exports and loads back with its outputs, on every device") {
    // The rows of op_rows.h: a new row is exported here with no test edit. Inputs are moved
    // into every row's domain (abs(x) + 0.5) by ops that are part of the graph too.
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      for (const UnaryRow& row : unary_rows()) {
        CAPTURE(row.name);
        FunctionBlock net([&row](const NDArray& x) { return row.function(nd::abs(x) + 0.5); });
        check_round_trip(net, random_input({3, 4}, device, 30), {random_input({5, 4}, device, 31)});
      }
      for (const BinaryRow& row : binary_rows()) {
        CAPTURE(row.name);
        FunctionBlock net(
            [&row](const NDArray& x) { return row.function(nd::abs(x) + 0.5, x * 0.5 + 1.0); });
        check_round_trip(net, random_input({3, 4}, device, 32), {random_input({5, 4}, device, 33)});
      }
    }
  }

  TEST_CASE("clip, where, stack and split export and load back with their outputs, everywhere") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      FunctionBlock net([](const NDArray& x) {
        const NDArray leaky = nd::where(x > 0.0, x, x * 0.1);
        const std::vector<NDArray> halves = nd::split(nd::clip(leaky, -0.5, 0.5), 2, 1);
        return nd::stack({halves[0], halves[1] * 2.0}, -1);
      });
      check_round_trip(net, random_input({3, 4}, device, 34), {random_input({5, 4}, device, 35)});
    }
  }

  TEST_CASE("take exports and loads back with its indices, everywhere") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      FunctionBlock net([device](const NDArray& x) {
        const NDArray columns = nd::from_vector(std::vector<std::int64_t>{3, 0, -1}, {3}, device);
        return nd::take(nd::tanh(x), columns, -1) * 2.0;
      });
      check_round_trip(net, random_input({3, 4}, device, 36), {random_input({5, 4}, device, 37)});
    }
  }

  TEST_CASE("a hybridized block exports its ops, not its replays") {
    nn::Sequential net = export_models::mlp();
    net.initialize(nn::Xavier());
    net.hybridize();
    const NDArray x = random_input({4, 5}, cpu(), 18);
    (void)net(x);
    (void)net(x);  // recorded and replayed by now
    ScratchDir dir;
    const nn::ExportedFiles files = nn::export_block(net, x, dir.file("hybrid"));
    const auto model = nn::ImportedBlock::load(files.graph, files.params);
    CHECK(model->num_nodes() > 0);
    check_bitwise_equal((*model)(x), net(x).copy());
  }

  TEST_CASE("a function hybridized with nd::hybridize inside forward exports its ops") {
    HybridizedFunctionBlock net;
    const NDArray x = random_input({2, 3}, cpu(), 19);
    (void)net(x);
    (void)net(x);  // the function recorded and replayed by now
    ScratchDir dir;
    const nn::ExportedFiles files = nn::export_block(net, x, dir.file("function"));
    const auto model = nn::ImportedBlock::load(files.graph, files.params);
    CHECK(model->num_nodes() >= 4);  // tanh, the two scalar ops and the copy
    check_bitwise_equal((*model)(x), net(x));
  }

  TEST_CASE("arrays a block holds are saved as constants") {
    OffsetBlock net(cpu());
    check_round_trip(net, random_input({2, 3}, cpu(), 10));
    ScratchDir dir;
    const nn::ExportedFiles files =
        nn::export_block(net, random_input({2, 3}, cpu(), 10), dir.file("offset"));
    const json graph = read_json(files.graph);
    REQUIRE(graph.at("constants").size() == 1);
    CHECK(graph.at("constants")[0].at("name") == "__constant.0");
    CHECK(nd::find(nd::load(files.params), "__constant.0").shape() == Shape{3});
  }

  TEST_CASE("the graph file names the format, the input, the parameters and the ops") {
    ExportedMlp mlp;
    const json graph = read_json(mlp.files.graph);
    CHECK(graph.at("format") == "tandem-graph");
    CHECK(graph.at("version") == 1);
    CHECK(graph.at("input").at("shape") == json::array({4, 5}));
    CHECK(graph.at("input").at("dtype") == "float32");
    std::vector<std::string> names;
    for (const json& p : graph.at("parameters")) names.push_back(p.at("name"));
    CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "2.weight",
                                            "2.bias"});
    std::vector<std::string> ops;
    for (const json& node : graph.at("nodes")) ops.push_back(node.at("op"));
    CHECK(std::find(ops.begin(), ops.end(), "dot") != ops.end());
    CHECK(std::find(ops.begin(), ops.end(), "relu") != ops.end());
    CHECK(std::find(ops.begin(), ops.end(), "tanh") != ops.end());
  }

  TEST_CASE("ops with a record write the attributes docs/file-format.md lists") {
    // The graph JSON of the ops that moved onto records (frontend/src/core/op_definition.h)
    // must stay what files exported before hold: these are the attributes their nodes had.
    FunctionBlock net([](const NDArray& x) {
      const NDArray w = nd::ones({2, 1, 3, 3});
      const NDArray y = nd::conv2d(x, w, {.stride = 2, .padding = {1, 0}, .dilation = 1});
      const NDArray p = nd::max_pool2d(y, {.kernel = 2, .stride = 1});
      const NDArray g = nd::global_avg_pool2d(p).reshape({1, 2});
      const NDArray s = nd::log_softmax(g, -1) + nd::sum(g, 1, true) + nd::mean(g);
      const NDArray idx = nd::from_vector(std::vector<std::int64_t>{1, 0}, {2});
      return nd::where(s > 0.0, nd::take(s, idx, -1), s);
    });
    ScratchDir dir;
    const nn::ExportedFiles files =
        nn::export_block(net, random_input({1, 1, 7, 6}, cpu(), 38), dir.file("records"));
    const json graph = read_json(files.graph);
    std::map<std::string, json> attrs;
    std::map<std::string, std::size_t> inputs;
    for (const json& node : graph.at("nodes")) {
      attrs[node.at("op")] = node.at("attrs");
      inputs[node.at("op")] = node.at("inputs").size();
    }
    CHECK(attrs.at("conv2d") ==
          json{{"stride", {2, 2}}, {"padding", {1, 0}}, {"dilation", {1, 1}}, {"groups", 1}});
    CHECK(inputs.at("conv2d") == 2);  // no bias: left out
    CHECK(attrs.at("max_pool2d") == json{{"kernel", {2, 2}},
                                         {"stride", {1, 1}},
                                         {"padding", {0, 0}},
                                         {"count_include_pad", true}});
    CHECK(attrs.at("global_avg_pool2d") == json::object());
    CHECK(attrs.at("log_softmax") == json{{"axis", 1}});
    CHECK(attrs.at("sum") == json{{"axis", 1}, {"keepdims", true}});
    CHECK(attrs.at("mean") == json::object());
    CHECK(attrs.at("take") == json{{"axis", 1}});
    CHECK(attrs.at("where") == json::object());
    CHECK(inputs.at("where") == 3);
    const auto model = nn::ImportedBlock::load(files.graph, files.params);
    const NDArray x = random_input({1, 1, 7, 6}, cpu(), 39);
    check_bitwise_equal((*model)(x), net(x));
  }

  TEST_CASE("an imported block is a block: parameters, fine-tuning and hybridize") {
    ExportedMlp mlp;
    const auto model = nn::ImportedBlock::load(mlp.files.graph, mlp.files.params);
    const nn::ParameterDict params = model->collect_params();
    CHECK(params.size() == 6);
    CHECK(params.contains("1.weight"));
    const NDArray x = random_input({4, 5}, cpu(), 11);
    const NDArray eager = (*model)(x).copy();
    model->hybridize();
    check_bitwise_equal((*model)(x), eager);
    check_bitwise_equal((*model)(x), eager);
    model->hybridize(false);

    nn::Trainer trainer(params, nn::SGD(0.1));
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 0}, {4});
    NDArray loss;
    {
      auto scope = autograd::record();
      loss = nd::sum(nd::softmax_cross_entropy((*model)(x), labels));
      loss.backward();
    }
    trainer.step(4);
    CHECK(nd::sum(nd::abs((*model)(x)-eager)).scalar<double>() > 0.0);
  }

  TEST_CASE("a model exported here runs in a fresh process that lacks the network's code") {
    for (const char* device : {"cpu", "sim"}) {
      CAPTURE(device);
      const Device on = std::string(device) == "sim" ? sim(0) : cpu();
      ScratchDir dir;
      nn::Sequential net = export_models::lenet();
      net.initialize(nn::Xavier(), {on});
      (void)net(random_input({2, 1, 12, 12}, on, 12));
      export_models::set_running_statistics(net, on);
      const nn::ExportedFiles files =
          nn::export_block(net, random_input({2, 1, 12, 12}, on, 13), dir.file("lenet"));
      const NDArray input = random_input({3, 1, 12, 12}, on, 14);
      nd::save(dir.file("input.tnd"), input);
      const ProcessResult result =
          run_process(std::string(TANDEM_EXPORT_RUNNER) + " " + files.graph + " " + files.params +
                      " " + dir.file("input.tnd") + " " + dir.file("output.tnd") + " " + device);
      INFO("output: ", result.output);
      REQUIRE(result.exit_code == 0);
      CHECK(contains(result.output, "ran "));
      check_bitwise_equal(nd::load_array(dir.file("output.tnd"), on), net(input));
    }
  }

  TEST_CASE("a graph file that is missing, not JSON, or of another format or version") {
    ExportedMlp mlp;
    const std::string& params = mlp.files.params;
    check_error([&] { nn::ImportedBlock::load(mlp.dir.file("none.json"), params); }, {"none.json"});
    const std::string broken = mlp.dir.file("broken.json");
    std::ofstream(broken) << "{\"format\": \"tandem-graph\", ";
    check_error([&] { nn::ImportedBlock::load(broken, params); },
                {"broken.json': is not a JSON object"});

    json graph = read_json(mlp.files.graph);
    graph["format"] = "onnx";
    write_json(broken, graph);
    check_error([&] { nn::ImportedBlock::load(broken, params); },
                {"is not a tandem graph (format \"onnx\""});
    graph = read_json(mlp.files.graph);
    graph["version"] = 99;
    write_json(broken, graph);
    check_error([&] { nn::ImportedBlock::load(broken, params); },
                {"version 99", "reads version 1 only"});
    graph = read_json(mlp.files.graph);
    graph["nodes"][0]["inputs"] = json::array({12345});
    write_json(broken, graph);
    check_error([&] { nn::ImportedBlock::load(broken, params); },
                {"reads the id 12345, which no earlier entry defines"});
    graph = read_json(mlp.files.graph);
    REQUIRE(graph["nodes"][0]["op"] == "transpose");
    graph["nodes"][0]["attrs"]["axes"] = "backwards";
    write_json(broken, graph);
    const auto model = nn::ImportedBlock::load(broken, params);
    check_error(
        [&] {
          (*model)(random_input({4, 5}, cpu(), 19));
        },
        {"node 0 (transpose) has a malformed attribute"});
  }

  TEST_CASE("a hostile graph file: deep nesting, huge values, integers past their range") {
    // Issue 27's outside round: a "format" nested 100,000 deep crashed the loader (the JSON
    // library's dump recursed while building the message), and [1, 4294967296] read as [1, 0].
    ExportedMlp mlp;
    const std::string& params = mlp.files.params;
    const std::string hostile = mlp.dir.file("hostile.json");
    const std::string text = read_text(mlp.files.graph);
    REQUIRE(text.front() == '{');
    std::ofstream(hostile) << "{\"deep\": " << std::string(100000, '[') << std::string(100000, ']')
                           << ", " << text.substr(1);
    check_error([&] { nn::ImportedBlock::load(hostile, params); },
                {"hostile.json", "nested deeper than 64 levels"});

    json graph = read_json(mlp.files.graph);
    graph["format"] = std::string(100000, 'x');
    write_json(hostile, graph);
    const std::string message = error_of([&] { nn::ImportedBlock::load(hostile, params); });
    CHECK(contains(message, "(100002 characters)"));
    CHECK(message.size() < 400);  // the value is cut, not copied into the message

    graph = read_json(mlp.files.graph);
    graph["nodes"][0]["inputs"] = json::array({4294967297LL});
    write_json(hostile, graph);
    check_error([&] { nn::ImportedBlock::load(hostile, params); },
                {"reads the id 4294967297, which no earlier entry defines"});

    graph = read_json(mlp.files.graph);
    REQUIRE(graph["nodes"][0]["op"] == "transpose");
    graph["nodes"][0]["attrs"]["axes"] = json::array({1, 4294967296LL});
    write_json(hostile, graph);
    const auto model = nn::ImportedBlock::load(hostile, params);
    check_error(
        [&] {
          (*model)(random_input({4, 5}, cpu(), 19));
        },
        {"node 0 (transpose)", "4294967296", "out of range"});
  }

  TEST_CASE("an op this build lacks is named with its node") {
    ExportedMlp mlp;
    json graph = read_json(mlp.files.graph);
    graph["nodes"][2]["op"] = "fancy_gelu";
    const std::string path = mlp.dir.file("unknown.json");
    write_json(path, graph);
    check_error([&] { nn::ImportedBlock::load(path, mlp.files.params); },
                {"op 'fancy_gelu' (node 2) is not known to this build"});
  }

  TEST_CASE("a missing, extra or mismatching parameter is named with both sides") {
    ExportedMlp mlp;
    nd::NamedArrays arrays = nd::load(mlp.files.params);
    const std::string path = mlp.dir.file("other-params.tnd");

    nd::NamedArrays missing(arrays.begin() + 1, arrays.end());
    nd::save(path, missing);
    check_error([&] { nn::ImportedBlock::load(mlp.files.graph, path); },
                {"the parameter '0.weight' is missing"});

    nd::NamedArrays extra = arrays;
    extra.emplace_back("3.weight", nd::ones({2, 2}));
    nd::save(path, extra);
    check_error([&] { nn::ImportedBlock::load(mlp.files.graph, path); },
                {"the extra array '3.weight'"});

    nd::NamedArrays reshaped = arrays;
    reshaped[1].second = nd::ones({17});
    nd::save(path, reshaped);
    check_error([&] { nn::ImportedBlock::load(mlp.files.graph, path); },
                {"'0.bias' has shape 17 float32 in the params file, but the graph expects 16 "
                 "float32"});

    nd::NamedArrays retyped = arrays;
    retyped[1].second = nd::ones({16}, nd::float64);
    nd::save(path, retyped);
    check_error([&] { nn::ImportedBlock::load(mlp.files.graph, path); },
                {"16 float64 in the params file"});
  }

  TEST_CASE("an input of another dtype or feature shape is refused; another batch size runs") {
    ExportedMlp mlp;
    const auto model = nn::ImportedBlock::load(mlp.files.graph, mlp.files.params);
    CHECK((*model)(random_input({11, 5}, cpu(), 15)).shape() == Shape{11, 3});
    check_error(
        [&] {
          (*model)(random_input({4, 6}, cpu(), 16));
        },
        {"the input has shape 4x6 float32, but the graph was exported for 4x5 float32"});
    check_error([&] { (*model)(nd::ones({4, 5}, nd::float64)); }, {"4x5 float64"});
  }

  TEST_CASE("a forward with an op a graph cannot hold cannot be exported") {
    ScratchDir dir;
    const NDArray x = random_input({2, 3}, cpu(), 17);
    CustomOpBlock custom;
    check_error([&] { nn::export_block(custom, x, dir.file("custom")); },
                {"the op 'my_scale' cannot be exported: it is an op of your own"});
    RandomBlock random;
    check_error([&] { nn::export_block(random, x, dir.file("random")); },
                {"the op 'random.uniform' cannot be exported"});
    InPlaceBlock in_place;
    check_error([&] { nn::export_block(in_place, x, dir.file("in_place")); },
                {"cannot be exported: in-place writes are not traced"});
  }
}

}  // namespace tandem::testing
