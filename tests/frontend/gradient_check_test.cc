// Finite-difference checks of every gradient rule, in float64 on cpu and sim(0).
//
// For an op f and fixed random weights R, the loss L = sum(f(inputs) * R) is differentiated by
// autograd (attach_grad, record, backward) and by central differences
// (L(x + h) - L(x - h)) / 2h, element by element, h = 1e-6. The relative error of a component
// is |autograd - numeric| / max(1, |autograd|, |numeric|); every op must stay at or below
// 1e-6, and the largest error per device is printed.
#include <cstdio>

#include "frontend_test_util.h"
#include "op_rows.h"

namespace tandem::testing {

namespace ag = tandem::autograd;

namespace {

using Inputs = std::vector<NDArray>;
using Function = std::function<NDArray(const Inputs&)>;

struct Input {
  Host host;
  bool differentiable = true;  // false: integer labels, passed as int32
};

struct Case {
  std::string name;
  std::vector<Input> inputs;
  Function f;
  bool training = false;  // run in train mode (dropout, batch_norm)
};

constexpr double kStep = 1e-6;
constexpr double kTolerance = 1e-6;

NDArray on_device(const Input& input, Device device) {
  if (!input.differentiable) {
    std::vector<std::int32_t> labels(input.host.values.begin(), input.host.values.end());
    return nd::from_vector(labels, input.host.shape, device);
  }
  return nd::from_vector(input.host.values, input.host.shape, device);
}

Inputs make_inputs(const std::vector<Input>& inputs, Device device) {
  Inputs arrays;
  for (const Input& input : inputs) arrays.push_back(on_device(input, device));
  return arrays;
}

double loss_value(const Case& c, const std::vector<Input>& inputs, const NDArray& weights,
                  Device device) {
  const auto mode = c.training ? ag::train_mode() : ag::predict_mode();
  return nd::sum(c.f(make_inputs(inputs, device)) * weights).scalar<double>();
}

// The largest relative error over every component of every differentiable input.
double check_case(const Case& c, Device device, std::mt19937_64& rng) {
  const NDArray shape_probe = [&] {
    const auto mode = c.training ? ag::train_mode() : ag::predict_mode();
    return c.f(make_inputs(c.inputs, device));
  }();
  const NDArray weights = nd::from_vector(random_host(shape_probe.shape(), rng, -1, 1).values,
                                          shape_probe.shape(), device);
  Inputs arrays = make_inputs(c.inputs, device);
  for (std::size_t i = 0; i < arrays.size(); ++i)
    if (c.inputs[i].differentiable) arrays[i].attach_grad();
  {
    auto scope = ag::record(c.training);
    const NDArray out = c.f(arrays);
    REQUIRE(out.needs_grad());
    nd::sum(out * weights).backward();
  }
  double worst = 0;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (!c.inputs[i].differentiable) continue;
    const NDArray grad = arrays[i].grad();
    REQUIRE(grad.shape() == arrays[i].shape());
    REQUIRE(grad.device() == device);
    const std::vector<double> analytic = grad.to_vector<double>();
    std::vector<Input> moved = c.inputs;
    for (std::size_t j = 0; j < analytic.size(); ++j) {
      const double original = c.inputs[i].host.values[j];
      moved[i].host.values[j] = original + kStep;
      const double plus = loss_value(c, moved, weights, device);
      moved[i].host.values[j] = original - kStep;
      const double minus = loss_value(c, moved, weights, device);
      moved[i].host.values[j] = original;
      const double numeric = (plus - minus) / (2 * kStep);
      const double error = std::fabs(analytic[j] - numeric) /
                           std::max({1.0, std::fabs(analytic[j]), std::fabs(numeric)});
      if (error > kTolerance) {
        FAIL_CHECK(c.name << " on " << to_string(device) << ": input " << i << " element " << j
                          << ": autograd " << analytic[j] << ", finite differences " << numeric);
      }
      worst = std::max(worst, error);
    }
  }
  return worst;
}

Input random_input(Shape shape, std::mt19937_64& rng, double low = -2, double high = 2) {
  return Input{random_host(shape, rng, low, high)};
}

// Values at least `gap` apart (for max, min, abs, relu: no ties, no kinks within the step).
Input spread_input(Shape shape, std::mt19937_64& rng, double gap = 0.1) {
  Host host{shape, {}};
  const std::int64_t n = shape.num_elements();
  for (std::int64_t i = 0; i < n; ++i)
    host.values.push_back((static_cast<double>(i) - static_cast<double>(n) / 2 + 0.5) * gap * 3);
  std::shuffle(host.values.begin(), host.values.end(), rng);
  return Input{host};
}

std::vector<Case> all_cases(std::mt19937_64& rng) {
  std::vector<Case> cases;
  const auto add = [&](std::string name, std::vector<Input> inputs, Function f,
                       bool training = false) {
    cases.push_back(Case{std::move(name), std::move(inputs), std::move(f), training});
  };
  const Shape m{2, 3};
  // The element-wise rows (op_rows.h): every differentiable one, with no edit for a new row.
  for (const UnaryRow& row : unary_rows()) {
    if (!row.differentiable) continue;
    add(row.name, {row.whole_line ? spread_input(m, rng) : random_input(m, rng, 0.5, 3)},
        [&row](const Inputs& x) { return row.function(x[0]); });
  }
  // Binary, with and without broadcasting.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {m, m}, {m, Shape{3}}, {Shape{2, 1}, Shape{1, 3}}, {Shape{3}, m}};
  for (const auto& [sa, sb] : shapes) {
    // Built with append, not "lit" + std::string: GCC 12 at -O3 reports a false -Wrestrict there.
    std::string tag(" ");
    tag.append(sa.to_string()).append(" ").append(sb.to_string());
    for (const BinaryRow& row : binary_rows()) {
      if (!row.differentiable) continue;
      // Positive bases for a floating-only row (power), spread values against ties (maximum,
      // minimum), divisors away from zero.
      add(std::string(row.name).append(tag),
          {row.floating_only ? random_input(sa, rng, 0.5, 2) : spread_input(sa, rng),
           random_input(sb, rng, 0.5, 2)},
          [&row](const Inputs& x) { return row.function(x[0], x[1]); });
    }
  }
  add("same array twice", {random_input(m, rng)},
      [](const Inputs& x) { return x[0] * x[0] + x[0]; });
  // With a scalar.
  add("x + s", {random_input(m, rng)}, [](const Inputs& x) { return x[0] + 1.5; });
  add("s - x", {random_input(m, rng)}, [](const Inputs& x) { return 1.5 - x[0]; });
  add("x - s", {random_input(m, rng)}, [](const Inputs& x) { return x[0] - 1.5; });
  add("s * x", {random_input(m, rng)}, [](const Inputs& x) { return 2.5 * x[0]; });
  add("x / s", {random_input(m, rng)}, [](const Inputs& x) { return x[0] / 2.5; });
  add("s / x", {random_input(m, rng, 0.5, 2)}, [](const Inputs& x) { return 2.5 / x[0]; });
  add("maximum(x, s)", {spread_input(m, rng)},
      [](const Inputs& x) { return nd::maximum(x[0], 0.05); });
  add("minimum(x, s)", {spread_input(m, rng)},
      [](const Inputs& x) { return nd::minimum(x[0], 0.05); });
  add("power(x, s)", {random_input(m, rng, 0.5, 2)},
      [](const Inputs& x) { return nd::power(x[0], 2.5); });
  // Views.
  const Shape cube{2, 3, 4};
  add("reshape", {random_input(cube, rng)}, [](const Inputs& x) { return x[0].reshape({4, -1}); });
  add("reshape of a transpose", {random_input(m, rng)},
      [](const Inputs& x) { return x[0].T().reshape({6}); });
  add("slice", {random_input(Shape{5, 2}, rng)},
      [](const Inputs& x) { return x[0].slice(1, 5, 2); });
  add("operator[]", {random_input(cube, rng)}, [](const Inputs& x) { return x[0][1]; });
  add("T", {random_input(m, rng)}, [](const Inputs& x) { return x[0].T() * 1.0; });
  add("transpose(axes)", {random_input(cube, rng)}, [](const Inputs& x) {
    return nd::transpose(x[0], {1, 2, 0});
  });
  // Reductions.
  add("sum", {random_input(cube, rng)}, [](const Inputs& x) { return nd::sum(x[0]); });
  add("mean", {random_input(cube, rng)}, [](const Inputs& x) { return nd::mean(x[0]); });
  add("max", {spread_input(cube, rng)}, [](const Inputs& x) { return nd::max(x[0]); });
  add("min", {spread_input(cube, rng)}, [](const Inputs& x) { return nd::min(x[0]); });
  add("norm", {random_input(cube, rng)}, [](const Inputs& x) { return nd::norm(x[0]); });
  for (int axis : {0, 1, -1}) {
    for (bool keepdims : {false, true}) {
      const std::string tag = " axis " + std::to_string(axis) + (keepdims ? " keepdims" : "");
      add("sum" + tag, {random_input(cube, rng)},
          [=](const Inputs& x) { return nd::sum(x[0], axis, keepdims); });
      add("mean" + tag, {random_input(cube, rng)},
          [=](const Inputs& x) { return nd::mean(x[0], axis, keepdims); });
      add("max" + tag, {spread_input(cube, rng)},
          [=](const Inputs& x) { return nd::max(x[0], axis, keepdims); });
      add("min" + tag, {spread_input(cube, rng)},
          [=](const Inputs& x) { return nd::min(x[0], axis, keepdims); });
      add("norm" + tag, {random_input(cube, rng)},
          [=](const Inputs& x) { return nd::norm(x[0], axis, keepdims); });
    }
  }
  // dot, every rank combination, and a transposed operand.
  add("dot 2x3 3x4", {random_input(m, rng), random_input(Shape{3, 4}, rng)},
      [](const Inputs& x) { return nd::dot(x[0], x[1]); });
  add("dot 2x3 3", {random_input(m, rng), random_input(Shape{3}, rng)},
      [](const Inputs& x) { return nd::dot(x[0], x[1]); });
  add("dot 3 3x4", {random_input(Shape{3}, rng), random_input(Shape{3, 4}, rng)},
      [](const Inputs& x) { return nd::dot(x[0], x[1]); });
  add("dot 3 3", {random_input(Shape{3}, rng), random_input(Shape{3}, rng)},
      [](const Inputs& x) { return nd::dot(x[0], x[1]); });
  add("dot x w.T", {random_input(m, rng), random_input(Shape{4, 3}, rng)},
      [](const Inputs& x) { return nd::dot(x[0], x[1].T()); });
  // Joins, copies.
  add("concat axis 0", {random_input(m, rng), random_input(Shape{1, 3}, rng)}, [](const Inputs& x) {
    return nd::concat({x[0], x[1]}, 0);
  });
  add("concat axis 1", {random_input(m, rng), random_input(Shape{2, 2}, rng)}, [](const Inputs& x) {
    return nd::concat({x[0], x[1]}, 1);
  });
  add("copy", {random_input(m, rng)}, [](const Inputs& x) { return x[0].copy(); });
  add("astype", {random_input(m, rng)}, [](const Inputs& x) { return x[0].astype(nd::float64); });
  add("copyto cpu", {random_input(m, rng)},
      [](const Inputs& x) { return (x[0].copyto(cpu()) * 2).copyto(x[0].device()); });
  add("copyto sim(0)", {random_input(m, rng)},
      [](const Inputs& x) { return (x[0].copyto(sim(0)) * 2).copyto(x[0].device()); });
  // Network operators.
  add("softmax", {random_input(Shape{3, 4}, rng)},
      [](const Inputs& x) { return nd::softmax(x[0]); });
  add("softmax axis 0", {random_input(Shape{3, 4}, rng)},
      [](const Inputs& x) { return nd::softmax(x[0], 0); });
  add("log_softmax", {random_input(Shape{3, 4}, rng)},
      [](const Inputs& x) { return nd::log_softmax(x[0]); });
  add("log_softmax axis 0", {random_input(Shape{3, 4}, rng)},
      [](const Inputs& x) { return nd::log_softmax(x[0], 0); });
  add("softmax_cross_entropy",
      {random_input(Shape{3, 4}, rng), Input{Host{Shape{3}, {2, 0, 3}}, false}},
      [](const Inputs& x) { return nd::softmax_cross_entropy(x[0], x[1]); });
  add("flatten", {random_input(cube, rng)}, [](const Inputs& x) { return nd::flatten(x[0]); });
  add(
      "dropout", {random_input(Shape{4, 5}, rng)},
      [](const Inputs& x) { return nd::dropout(x[0], 0.4, 7); }, true);
  const Shape image{3, 2, 2, 2};
  const auto batch_norm = [](const Inputs& x) {
    const NDArray running_mean = nd::zeros({2}, nd::float64, x[0].device());
    const NDArray running_var = nd::ones({2}, nd::float64, x[0].device());
    return nd::batch_norm(x[0], x[1], x[2], running_mean, running_var, 0.9, 1e-5);
  };
  add("batch_norm train",
      {random_input(image, rng), random_input(Shape{2}, rng), random_input(Shape{2}, rng)},
      batch_norm, true);
  add("batch_norm predict",
      {random_input(image, rng), random_input(Shape{2}, rng), random_input(Shape{2}, rng)},
      batch_norm, false);
  add(
      "batch_norm train 2-D",
      {random_input(Shape{4, 3}, rng), random_input(Shape{3}, rng), random_input(Shape{3}, rng)},
      [](const Inputs& x) {
        const NDArray running_mean = nd::zeros({3}, nd::float64, x[0].device());
        const NDArray running_var = nd::ones({3}, nd::float64, x[0].device());
        return nd::batch_norm(x[0], x[1], x[2], running_mean, running_var);
      },
      true);
  // Convolution and pooling.
  add("conv2d with bias",
      {random_input(Shape{2, 3, 5, 5}, rng), random_input(Shape{4, 3, 3, 3}, rng),
       random_input(Shape{4}, rng)},
      [](const Inputs& x) { return nd::conv2d(x[0], x[1], x[2], {.padding = 1}); });
  add("conv2d stride 2, dilation 2, groups 2",
      {random_input(Shape{1, 4, 7, 6}, rng), random_input(Shape{2, 2, 2, 3}, rng)},
      [](const Inputs& x) {
        return nd::conv2d(x[0], x[1], {.stride = 2, .padding = {1, 0}, .dilation = 2, .groups = 2});
      });
  add("max_pool2d", {spread_input(Shape{2, 2, 5, 5}, rng)}, [](const Inputs& x) {
    return nd::max_pool2d(x[0], {.kernel = 3, .stride = 2, .padding = 1});
  });
  add("avg_pool2d", {random_input(Shape{2, 2, 5, 4}, rng)}, [](const Inputs& x) {
    return nd::avg_pool2d(x[0],
                          {.kernel = 2, .stride = 1, .padding = 1, .count_include_pad = false});
  });
  add("global_avg_pool2d", {random_input(Shape{2, 3, 3, 2}, rng)},
      [](const Inputs& x) { return nd::global_avg_pool2d(x[0]); });
  add("conv, relu, max pool",
      {random_input(Shape{2, 1, 6, 6}, rng), random_input(Shape{3, 1, 3, 3}, rng),
       random_input(Shape{3}, rng)},
      [](const Inputs& x) {
        return nd::max_pool2d(nd::relu(nd::conv2d(x[0], x[1], x[2], {.padding = 1})),
                              {.kernel = 2});
      });
  // The array ops of issue 25: clip away from its bounds, stack and split along inner axes.
  add("clip", {spread_input(Shape{3, 4}, rng)},
      [](const Inputs& x) { return nd::clip(x[0], -0.5, 0.5); });
  add("where",
      {Input{Host{Shape{2, 3}, {1, 0, 0, 1, 1, 0}}, false}, random_input(Shape{2, 3}, rng),
       random_input(Shape{3}, rng)},
      [](const Inputs& x) { return nd::where(x[0], x[1] * x[1], x[2]); });
  // take: repeated and negative indices along an inner axis (the gradient adds up).
  add("take", {random_input(Shape{2, 4, 3}, rng), Input{Host{Shape{5}, {3, 0, -1, 1, 3}}, false}},
      [](const Inputs& x) { return nd::take(x[0] * x[0], x[1].astype(nd::int64), 1); });
  add("stack", {random_input(Shape{2, 3}, rng), random_input(Shape{2, 3}, rng)},
      [](const Inputs& x) {
        return nd::stack({x[0], x[1] * x[1]}, 1);
      });
  add("split", {random_input(Shape{4, 6}, rng)}, [](const Inputs& x) {
    const std::vector<NDArray> parts = nd::split(x[0], 3, 1);
    return parts[0] * parts[2] + parts[1];
  });
  // A small network: dense, relu, dense, cross entropy.
  add("mlp",
      {random_input(Shape{4, 3}, rng), random_input(Shape{3, 5}, rng), random_input(Shape{5}, rng),
       random_input(Shape{5, 3}, rng), Input{Host{Shape{4}, {0, 2, 1, 2}}, false}},
      [](const Inputs& x) {
        const NDArray hidden = nd::tanh(nd::dot(x[0], x[1]) + x[2]);
        return nd::mean(nd::softmax_cross_entropy(nd::dot(hidden, x[3]), x[4]));
      });
  return cases;
}

void check_all(Device device) {
  std::mt19937_64 rng(13);
  double worst = 0;
  std::string worst_case;
  for (const Case& c : all_cases(rng)) {
    INFO(c.name);
    const double error = check_case(c, device, rng);
    if (error >= worst) {
      worst = error;
      worst_case = c.name;
    }
  }
  std::printf("gradient check on %s: max relative error %.3g (%s)\n", to_string(device).c_str(),
              worst, worst_case.c_str());
  CHECK(worst <= kTolerance);
}

}  // namespace

TEST_SUITE("frontend.gradient_check") {
  TEST_CASE("every gradient rule matches finite differences on cpu") {
    check_all(cpu());
  }
  TEST_CASE("every gradient rule matches finite differences on sim(0)") {
    check_all(sim(0));
  }
}

}  // namespace tandem::testing
