// The backward ops of convolution and pooling against central finite differences of the
// forward ops, in float64 on cpu and sim(0): for L = sum(forward(inputs) * r) with a random r,
// each backward op given grad_out = r must return dL/d(input). Max relative error <= 1e-6,
// relative to max(1, |finite difference|); the largest errors are printed.
#include <algorithm>
#include <iostream>

#include "conv_reference.h"

namespace tandem::testing {

namespace {

constexpr double kStep = 1e-5;
constexpr double kTolerance = 1e-6;

std::vector<Device> test_devices() {
  std::vector<Device> devices{cpu()};
  if (device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
  return devices;
}

// sum(forward(h) * r), evaluated by tandem on `device`.
using Loss = std::function<double(const Host&)>;

// The largest error of `analytic` (dL/dh) against central differences of `loss` at `h`.
double max_error(const Loss& loss, Host h, const NDArray& analytic) {
  REQUIRE(analytic.shape().to_string() == h.shape.to_string());
  const auto grad = analytic.to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < h.values.size(); ++i) {
    const double saved = h.values[i];
    h.values[i] = saved + kStep;
    const double up = loss(h);
    h.values[i] = saved - kStep;
    const double down = loss(h);
    h.values[i] = saved;
    const double numeric = (up - down) / (2 * kStep);
    worst = std::max(worst, std::fabs(grad[i] - numeric) / std::max(1.0, std::fabs(numeric)));
  }
  return worst;
}

void report(const std::string& what, double error) {
  std::cout << "  max rel err " << what << ": " << error << "\n";
  INFO(what);
  CHECK(error <= kTolerance);
}

NDArray on(const Host& h, Device device) {
  return to_array(h, nd::float64).copyto(device);
}

double weighted_sum(const NDArray& y, const NDArray& r) {
  return nd::sum(y * r).scalar<double>();
}

// Distinct values 0.01 apart in random order: no two inputs of a max window are within the
// finite-difference step of each other.
Host distinct_host(const Shape& shape, std::mt19937_64& rng) {
  Host h{shape, std::vector<double>(static_cast<std::size_t>(shape.num_elements()))};
  for (std::size_t i = 0; i < h.values.size(); ++i) h.values[i] = 0.01 * static_cast<double>(i) - 1;
  std::shuffle(h.values.begin(), h.values.end(), rng);
  return h;
}

}  // namespace

TEST_SUITE("frontend.conv_pool_grad") {
  TEST_CASE("conv2d_backward_data, _weight and _bias match finite differences of conv2d") {
    std::mt19937_64 rng(130);
    const std::vector<std::tuple<Shape, Shape, nd::Conv2dOptions>> cases{
        {{2, 3, 5, 6}, {4, 3, 3, 3}, {.padding = 1}},
        {{1, 2, 7, 7}, {3, 2, 3, 2}, {.stride = 2, .padding = {1, 0}}},
        {{2, 4, 7, 6}, {4, 2, 2, 3}, {.stride = {2, 1}, .padding = 1, .dilation = 2, .groups = 2}},
        {{2, 3, 4, 4}, {5, 3, 1, 1}, {}},
    };
    for (const Device device : test_devices()) {
      for (const auto& [xs, ws, o] : cases) {
        const Host x = random_host(xs, rng), w = random_host(ws, rng),
                   b = random_host({ws[0]}, rng);
        const Shape ys = nd::conv2d_output_shape(xs, ws, o);
        const NDArray r = on(random_host(ys, rng), device);
        const NDArray ax = on(x, device), aw = on(w, device), ab = on(b, device);
        const std::string what = to_string(device) + " x " + xs.to_string() + " w " +
                                 ws.to_string() + " stride " + o.stride.to_string() + " padding " +
                                 o.padding.to_string() + " dilation " + o.dilation.to_string() +
                                 " groups " + std::to_string(o.groups);
        report("conv2d dx " + what, max_error(
                                        [&](const Host& h) {
                                          return weighted_sum(nd::conv2d(on(h, device), aw, ab, o),
                                                              r);
                                        },
                                        x, nd::conv2d_backward_data(r, aw, xs, o)));
        report("conv2d dw " + what, max_error(
                                        [&](const Host& h) {
                                          return weighted_sum(nd::conv2d(ax, on(h, device), ab, o),
                                                              r);
                                        },
                                        w, nd::conv2d_backward_weight(r, ax, ws, o)));
        report("conv2d db " + what, max_error(
                                        [&](const Host& h) {
                                          return weighted_sum(nd::conv2d(ax, aw, on(h, device), o),
                                                              r);
                                        },
                                        b, nd::conv2d_backward_bias(r)));
      }
    }
  }

  TEST_CASE("max_pool2d_backward and avg_pool2d_backward match finite differences") {
    std::mt19937_64 rng(131);
    const std::vector<std::pair<Shape, nd::Pool2dOptions>> cases{
        {{2, 2, 6, 6}, {.kernel = 2}},
        {{1, 2, 7, 8}, {.kernel = 3, .stride = 2, .padding = 1}},
        {{2, 1, 5, 7},
         {.kernel = {3, 2}, .stride = 1, .padding = {1, 0}, .count_include_pad = false}},
    };
    for (const Device device : test_devices()) {
      for (const auto& [xs, o] : cases) {
        const Host x = distinct_host(xs, rng);
        const NDArray r = on(random_host(nd::pool2d_output_shape(xs, o), rng), device);
        const std::string what = to_string(device) + " x " + xs.to_string() + " kernel " +
                                 o.kernel.to_string() + " padding " + o.padding.to_string() +
                                 (o.count_include_pad ? "" : " excluding padding");
        report("max_pool2d " + what,
               max_error(
                   [&](const Host& h) { return weighted_sum(nd::max_pool2d(on(h, device), o), r); },
                   x, nd::max_pool2d_backward(r, on(x, device), o)));
        report("avg_pool2d " + what,
               max_error(
                   [&](const Host& h) { return weighted_sum(nd::avg_pool2d(on(h, device), o), r); },
                   x, nd::avg_pool2d_backward(r, xs, o)));
      }
      const Host x = random_host({2, 3, 4, 5}, rng);
      const NDArray r = on(random_host({2, 3, 1, 1}, rng), device);
      report(
          "global_avg_pool2d " + to_string(device),
          max_error(
              [&](const Host& h) { return weighted_sum(nd::global_avg_pool2d(on(h, device)), r); },
              x, nd::global_avg_pool2d_backward(r, x.shape)));
    }
  }
}

}  // namespace tandem::testing

namespace tandem::testing {

TEST_SUITE("frontend.conv_pool_grad") {
  TEST_CASE("autograd through conv2d and pooling: gradients only for the attached arrays") {
    std::mt19937_64 rng(132);
    for (const Device device : test_devices()) {
      const NDArray x = on(random_host({2, 3, 6, 6}, rng), device);
      NDArray w = on(random_host({4, 3, 3, 3}, rng), device);
      const NDArray r = on(random_host({2, 4, 3, 3}, rng), device);
      w.attach_grad();  // x is data: no gradient, and its rule computes none
      const nd::Conv2dOptions o{.padding = 1};
      const nd::Pool2dOptions pool{.kernel = 2};
      NDArray y;
      {
        auto scope = autograd::record();
        y = nd::conv2d(x, w, o);
        nd::sum(nd::max_pool2d(y, pool) * r).backward();
      }
      CHECK_FALSE(x.needs_grad());
      const NDArray expected =
          nd::conv2d_backward_weight(nd::max_pool2d_backward(r, y.detach(), pool), x, w.shape(), o);
      const auto got = w.grad().to_vector<double>(), want = expected.to_vector<double>();
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]));
    }
  }
}

}  // namespace tandem::testing

namespace tandem::testing {

namespace {

using LeafGradients = std::vector<std::vector<double>>;

// A random conv net program `seed` on `engine` and `device`: convolutions (random stride,
// padding, dilation, groups, bias), pooling and relu on one activation; returns every leaf's
// gradient of sum(output^2).
LeafGradients run_conv_program(Engine& engine, Device device, std::uint64_t seed) {
  nd::EngineScope scope(engine);
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  std::vector<NDArray> leaves;
  const auto leaf = [&](const Shape& shape) {
    leaves.push_back(on(random_host(shape, rng, -1, 1), device));
    leaves.back().attach_grad();
    return leaves.back();
  };
  NDArray h = leaf({2, 4, 11, 10});
  {
    auto record = autograd::record();
    for (int step = 0; step < 6; ++step) {
      const Shape s = h.shape();
      switch (pick(0, 3)) {
        case 0:
        case 1: {
          const std::int64_t groups = s[1] % 2 == 0 ? pick(1, 2) : 1;
          const std::int64_t out = groups * pick(1, 3), kernel = pick(1, 3);
          const nd::Conv2dOptions o{.stride = pick(1, 2),
                                    .padding = pick(0, 1),
                                    .dilation = pick(1, 2),
                                    .groups = groups};
          const std::int64_t span = o.dilation.h * (kernel - 1) + 1;
          if (std::min(s[2], s[3]) + 2 * o.padding.h < span) break;
          const NDArray w = leaf({out, s[1] / groups, kernel, kernel});
          h = pick(0, 1) ? nd::conv2d(h, w, leaf({out}), o) : nd::conv2d(h, w, o);
          break;
        }
        case 2: {
          const nd::Pool2dOptions o{.kernel = 2, .stride = pick(1, 2), .padding = pick(0, 1)};
          if (std::min(s[2], s[3]) + 2 * o.padding.h < 2) break;
          h = pick(0, 1) ? nd::max_pool2d(h, o) : nd::avg_pool2d(h, o);
          break;
        }
        default:
          h = nd::relu(h);
          break;
      }
    }
    nd::sum(h * h).backward();
  }
  LeafGradients gradients;
  for (const NDArray& l : leaves) gradients.push_back(l.grad().to_vector<double>());
  return gradients;
}

}  // namespace

TEST_SUITE("frontend.conv_pool_grad") {
  TEST_CASE("random conv nets: identical gradients on naive and threaded engines, cpu and sim") {
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    auto threaded = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    auto one_worker = Engine::create(EngineConfig{.kind = EngineKind::threaded, .cpu_workers = 1});
    const int programs = static_cast<int>(scaled(12, 3));
    std::size_t leaves = 0;
    std::int64_t nonzero = 0;
    for (int seed = 1; seed <= programs; ++seed) {
      CAPTURE(seed);
      const auto s = static_cast<std::uint64_t>(seed);
      const LeafGradients expected = run_conv_program(*naive, cpu(), s);
      leaves += expected.size();
      for (const auto& g : expected)
        nonzero += std::count_if(g.begin(), g.end(), [](double v) { return v != 0; });
      CHECK(run_conv_program(*threaded, cpu(), s) == expected);
      CHECK(run_conv_program(*one_worker, cpu(), s) == expected);
      if (device_count(DeviceKind::sim) > 0)
        CHECK(run_conv_program(*threaded, sim(0), s) == expected);
    }
    // The programs hold weights (more leaves than their input), and gradients reach them.
    CHECK(leaves > 2 * static_cast<std::size_t>(programs));
    CHECK(nonzero > 0);
  }
}

}  // namespace tandem::testing
