// The tests that follow the op records (frontend/src/core/op_definition.h): every record, the
// element-wise rows' included, is called through the example calls it declares, and
//   - gives the cpu's values on every test device (cpu, sim, cuda(0) when present; null(0) in
//     frontend_null_device_tests): bit for bit where the device runs the cpu kernels;
//   - where differentiable, has an autograd gradient that matches central finite differences
//     on the cpu, and the cpu's gradient on every other device;
//   - exports (nn::export_block) and imports (nn::ImportedBlock::load) to the same bits.
// A new record, or a new row of TANDEM_UNARY_OPS / TANDEM_BINARY_OPS, is tested here with no
// edit: the test reads the records, not a list of its own.
#include <tandem/nd/detail/op_records.h>
#include <tandem/nn/export.h>
#include <tandem/nn/imported_block.h>
#include <tandem/ops/op_kinds.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "frontend_test_util.h"
#include "scratch_dir.h"
#include "test_devices.h"

namespace tandem::testing {

namespace ag = tandem::autograd;
using nd::detail::OpDefinition;
using nd::detail::OpExample;

namespace {

constexpr double kStep = 1e-6;
constexpr double kGradientTolerance = 1e-6;
// cuda's reductions and gemm sum in another order than the cpu's.
constexpr double kDeviceTolerance = 1e-9;

std::string describe(const OpDefinition& definition, const OpExample& example, Device device) {
  return std::string(definition.name) + " (" + example.label + ") on " + to_string(device);
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, bool exact,
                 const std::string& what) {
  REQUIRE_MESSAGE(actual.size() == expected.size(), what);
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const bool same = exact ? actual[i] == expected[i]
                            : std::fabs(actual[i] - expected[i]) <=
                                  kDeviceTolerance * std::max(1.0, std::fabs(expected[i]));
    if (!same) {
      FAIL_CHECK(what << ": element " << i << " is " << actual[i] << ", the cpu's " << expected[i]);
      return;
    }
  }
}

// Every record with each of its examples.
template <class Fn>
void for_each_example(Fn&& fn) {
  for (const OpDefinition* definition : nd::detail::all_op_definitions()) {
    REQUIRE_MESSAGE(bool(definition->examples != nullptr),
                    definition->name << " has no example calls: give its record `examples`");
    for (const OpExample& example : definition->examples()) fn(*definition, example);
  }
}

NDArray on_cpu_with(const NDArray& input, std::size_t element, double value) {
  std::vector<double> values = input.to_vector<double>();
  values[element] = value;
  return nd::from_vector(values, input.shape(), cpu());
}

double weighted_sum(const OpExample& example, const std::vector<NDArray>& inputs,
                    const NDArray& weights) {
  return nd::sum(example.run(inputs) * weights).scalar<double>();
}

// The autograd gradients of sum(run(inputs) * weights) for the example's differentiable inputs.
std::vector<std::vector<double>> gradients(const OpExample& example, std::vector<NDArray> inputs,
                                           const NDArray& weights) {
  for (int i : example.differentiable) inputs[static_cast<std::size_t>(i)].attach_grad();
  {
    auto scope = ag::record();
    const NDArray out = example.run(inputs);
    REQUIRE(out.needs_grad());
    nd::sum(out * weights).backward();
  }
  std::vector<std::vector<double>> grads;
  for (int i : example.differentiable) {
    const NDArray& input = inputs[static_cast<std::size_t>(i)];
    REQUIRE(input.grad().shape() == input.shape());
    REQUIRE(input.grad().device() == input.device());
    grads.push_back(input.grad().to_vector<double>());
  }
  return grads;
}

// The block an export sees: the example's first input is the block's input, the others are
// constants of the graph.
class ExampleBlock : public nn::Block {
 public:
  ExampleBlock(const OpExample& example, std::vector<NDArray> inputs)
      : example_(example), inputs_(std::move(inputs)) {}
  NDArray forward(const NDArray& x) override {
    std::vector<NDArray> inputs = inputs_;
    inputs[0] = x;
    return example_.run(inputs);
  }

 private:
  const OpExample& example_;
  std::vector<NDArray> inputs_;
};

}  // namespace

TEST_SUITE("frontend.op_records") {
  TEST_CASE("the records have distinct names, and every record has example calls") {
    std::set<std::string> names;
    std::size_t count = 0;
    for (const OpDefinition* definition : nd::detail::all_op_definitions()) {
      INFO(definition->name);
      CHECK(names.insert(definition->name).second);
      CHECK(bool(definition->import != nullptr));
      REQUIRE(bool(definition->examples != nullptr));
      CHECK(!definition->examples().empty());
      ++count;
    }
    // Every element-wise row (and its scalar form) is a record.
    CHECK(count >= static_cast<std::size_t>(ops::kUnaryOpCount + 2 * ops::kBinaryOpCount));
    MESSAGE(count << " op records");
  }

  TEST_CASE("every record gives the cpu's values on every test device") {
    const std::vector<Device> devices = accelerators();
    for_each_example([&](const OpDefinition& definition, const OpExample& example) {
      const NDArray expected = example.run(example.inputs(cpu()));
      const std::vector<double> expected_values = expected.to_vector<double>();
      for (Device device : devices) {
        const std::string what = describe(definition, example, device);
        const NDArray out = example.run(example.inputs(device));
        CHECK_MESSAGE(out.shape() == expected.shape(), what);
        CHECK_MESSAGE(out.dtype() == expected.dtype(), what);
        CHECK_MESSAGE(out.device() == device, what);
        check_close(out.to_vector<double>(), expected_values, runs_cpu_kernels(device), what);
      }
    });
  }

  TEST_CASE("every differentiable record's gradient matches finite differences") {
    const std::vector<Device> devices = accelerators();
    for_each_example([&](const OpDefinition& definition, const OpExample& example) {
      if (example.differentiable.empty()) return;
      const std::vector<NDArray> inputs = example.inputs(cpu());
      const NDArray probe = example.run(inputs);
      const NDArray weights = nd::detail::example_array(probe.shape(), cpu(), 99, -1.0, 1.0);
      const std::vector<std::vector<double>> analytic = gradients(example, inputs, weights);
      // Central differences, element by element, on the cpu.
      for (std::size_t k = 0; k < example.differentiable.size(); ++k) {
        const auto i = static_cast<std::size_t>(example.differentiable[k]);
        const std::vector<double> values = inputs[i].to_vector<double>();
        for (std::size_t j = 0; j < values.size(); ++j) {
          std::vector<NDArray> moved = inputs;
          moved[i] = on_cpu_with(inputs[i], j, values[j] + kStep);
          const double plus = weighted_sum(example, moved, weights);
          moved[i] = on_cpu_with(inputs[i], j, values[j] - kStep);
          const double minus = weighted_sum(example, moved, weights);
          const double numeric = (plus - minus) / (2 * kStep);
          const double error = std::fabs(analytic[k][j] - numeric) /
                               std::max({1.0, std::fabs(analytic[k][j]), std::fabs(numeric)});
          if (error > kGradientTolerance) {
            FAIL_CHECK(describe(definition, example, cpu())
                       << ": input " << i << " element " << j << ": autograd " << analytic[k][j]
                       << ", finite differences " << numeric);
          }
        }
      }
      // The same gradient on every other device.
      for (Device device : devices) {
        const std::string what = describe(definition, example, device);
        const std::vector<std::vector<double>> on_device =
            gradients(example, example.inputs(device), weights.copyto(device));
        for (std::size_t k = 0; k < analytic.size(); ++k)
          check_close(on_device[k], analytic[k], runs_cpu_kernels(device), what);
      }
    });
  }

  TEST_CASE("every record exports and imports to the same bits") {
    for_each_example([](const OpDefinition& definition, const OpExample& example) {
      const std::string what = describe(definition, example, cpu());
      const std::vector<NDArray> inputs = example.inputs(cpu());
      ExampleBlock block(example, inputs);
      ScratchDir dir;
      const nn::ExportedFiles files = nn::export_block(block, inputs[0], dir.file("op"));
      const auto model = nn::ImportedBlock::load(files.graph, files.params, cpu());
      CHECK_MESSAGE(model->num_nodes() > 0, what);
      const NDArray expected = block(inputs[0]);
      const NDArray imported = (*model)(inputs[0]);
      REQUIRE_MESSAGE(imported.shape() == expected.shape(), what);
      CHECK_MESSAGE(imported.dtype() == expected.dtype(), what);
      check_close(imported.to_vector<double>(), expected.to_vector<double>(), true, what);
    });
  }
}

}  // namespace tandem::testing
