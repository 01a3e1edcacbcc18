// batch_norm in training mode runs as one fused op forward and one backward (the batch_norm
// kernel family): its values, running statistics and gradients against the formula computed
// here in double, on every test device, float32 and float64, dense and strided inputs, a large
// mean in float32; one op each way (profiled on sim), and the errors.
#include "frontend_test_util.h"
#include "tandem/profiler.h"
#include "test_devices.h"

#include <map>

namespace tandem::testing {

namespace ag = tandem::autograd;

namespace {

struct Expected {
  std::vector<double> y, running_mean, running_var, dx, dgamma, dbeta;
};

// The formula, for x of shape N x C x S... (row-major), upstream gradient w.
Expected reference(const Host& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                   std::vector<double> running_mean, std::vector<double> running_var,
                   const std::vector<double>& w, double momentum, double eps) {
  const std::int64_t n = x.shape[0], c = x.shape[1], s = x.values.size() / (n * c);
  const auto at = [&](std::int64_t i, std::int64_t ch, std::int64_t j) {
    return static_cast<std::size_t>((i * c + ch) * s + j);
  };
  Expected e;
  e.y.resize(x.values.size());
  e.dx.resize(x.values.size());
  const double m = static_cast<double>(n * s);
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < s; ++j) mean += x.values[at(i, ch, j)];
    mean /= m;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < s; ++j) var += std::pow(x.values[at(i, ch, j)] - mean, 2);
    var /= m;
    const double inv_std = 1 / std::sqrt(var + eps);
    double sum_w = 0, sum_w_xhat = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < s; ++j) {
        const double xhat = (x.values[at(i, ch, j)] - mean) * inv_std;
        e.y[at(i, ch, j)] = xhat * gamma[ch] + beta[ch];
        sum_w += w[at(i, ch, j)];
        sum_w_xhat += w[at(i, ch, j)] * xhat;
      }
    }
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < s; ++j) {
        const double xhat = (x.values[at(i, ch, j)] - mean) * inv_std;
        e.dx[at(i, ch, j)] =
            gamma[ch] * inv_std * (w[at(i, ch, j)] - sum_w / m - xhat * sum_w_xhat / m);
      }
    }
    e.dgamma.push_back(sum_w_xhat);
    e.dbeta.push_back(sum_w);
    const auto k = static_cast<std::size_t>(ch);
    running_mean[k] = momentum * running_mean[k] + (1 - momentum) * mean;
    running_var[k] = momentum * running_var[k] + (1 - momentum) * var;
  }
  e.running_mean = running_mean;
  e.running_var = running_var;
  return e;
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                 double tolerance, const char* what) {
  CAPTURE(what);
  REQUIRE(actual.size() == expected.size());
  double worst = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    worst = std::max(worst, std::abs(actual[i] - expected[i]) / (1 + std::abs(expected[i])));
  }
  CHECK(worst <= tolerance);
}

std::vector<double> random_values(std::size_t n, std::mt19937_64& rng, double low, double high) {
  std::uniform_real_distribution<double> u(low, high);
  std::vector<double> v(n);
  for (double& value : v) value = u(rng);
  return v;
}

// Runs batch_norm in train mode under recording with loss sum(y * w) and checks everything
// against the formula. `transposed`: x is handed over as a strided view.
void check_against_formula(Device device, DType dtype, const Shape& shape, double offset,
                           bool transposed) {
  CAPTURE(to_string(device));
  CAPTURE(dtype_name(dtype));
  CAPTURE(shape.to_string());
  std::mt19937_64 rng(42);
  const std::int64_t channels = shape[1];
  const auto c = static_cast<std::size_t>(channels);
  Host x_host{shape, random_values(static_cast<std::size_t>(shape.num_elements()), rng,
                                   offset - 2.0, offset + 2.0)};
  const std::vector<double> gamma = random_values(c, rng, 0.5, 1.5);
  const std::vector<double> beta = random_values(c, rng, -1, 1);
  const std::vector<double> rm0 = random_values(c, rng, -1, 1);
  const std::vector<double> rv0 = random_values(c, rng, 0.5, 2);
  const std::vector<double> w = random_values(x_host.values.size(), rng, -1, 1);
  const Expected e = reference(x_host, gamma, beta, rm0, rv0, w, 0.9, 1e-5);

  const auto make = [&](const Shape& s, const std::vector<double>& v) {
    return nd::from_vector(v, s, device).astype(dtype);
  };
  NDArray x = make(shape, x_host.values);
  if (transposed) {
    // The same values reached through a strided view: swap axes 0 and 1 twice.
    std::vector<int> axes(static_cast<std::size_t>(shape.ndim()));
    for (int i = 0; i < shape.ndim(); ++i) axes[static_cast<std::size_t>(i)] = i;
    std::swap(axes[0], axes[1]);
    x = nd::transpose(nd::transpose(x, axes).copy(), axes);
    REQUIRE_FALSE(x.is_contiguous());
  }
  NDArray g = make(Shape{channels}, gamma), b = make(Shape{channels}, beta);
  NDArray running_mean = make(Shape{channels}, rm0), running_var = make(Shape{channels}, rv0);
  x.attach_grad();
  g.attach_grad();
  b.attach_grad();
  const NDArray weights = make(shape, w);
  NDArray y;
  {
    auto scope = ag::record(true);
    y = nd::batch_norm(x, g, b, running_mean, running_var, 0.9, 1e-5);
    nd::sum(y * weights).backward();
  }
  // float32 keeps ~7 digits; a mean of 1e4 costs ~4 of them in the input itself.
  const double tolerance = dtype == nd::float64 ? 1e-9 : (offset == 0 ? 2e-5 : 2e-3);
  check_close(y.to_vector<double>(), e.y, tolerance, "y");
  check_close(running_mean.to_vector<double>(), e.running_mean, tolerance, "running_mean");
  check_close(running_var.to_vector<double>(), e.running_var, tolerance, "running_var");
  check_close(x.grad().to_vector<double>(), e.dx, tolerance, "dx");
  // dgamma and dbeta are sums over the batch: relative to their size.
  const double sum_tolerance = tolerance * static_cast<double>(shape.num_elements() / channels);
  check_close(g.grad().to_vector<double>(), e.dgamma, sum_tolerance, "dgamma");
  check_close(b.grad().to_vector<double>(), e.dbeta, sum_tolerance, "dbeta");
}

}  // namespace

TEST_SUITE("frontend.batch_norm") {
  TEST_CASE("training batch_norm matches the formula: values, running statistics, gradients") {
    for (Device device : test_devices()) {
      for (DType dtype : {nd::float64, nd::float32}) {
        check_against_formula(device, dtype, Shape{6, 3}, 0.0, false);
        check_against_formula(device, dtype, Shape{4, 3, 5, 6}, 0.0, false);
        check_against_formula(device, dtype, Shape{2, 5, 7}, 0.0, true);
        check_against_formula(device, dtype, Shape{1, 2, 1, 1}, 0.0, false);
      }
      // A large mean: the sums are shifted, the output subtracts the mean before scaling.
      check_against_formula(device, nd::float32, Shape{8, 2, 4, 4}, 1e4, false);
    }
  }

  TEST_CASE("training batch_norm is one op forward and one backward") {
    if (device_count(DeviceKind::sim) == 0) return;
    const Device device = sim(0);
    NDArray x = nd::random::normal({8, 4, 5, 5}, {.device = device});
    NDArray gamma = nd::ones({4}, nd::float32, device), beta = nd::zeros({4}, nd::float32, device);
    NDArray running_mean = nd::zeros({4}, nd::float32, device);
    NDArray running_var = nd::ones({4}, nd::float32, device);
    gamma.attach_grad();
    beta.attach_grad();
    x.attach_grad();
    nd::waitall();
    profiler::start();
    {
      auto scope = ag::record(true);
      NDArray y = nd::batch_norm(x, gamma, beta, running_mean, running_var);
      nd::sum(y * y).backward();
    }
    nd::waitall();
    profiler::stop();
    std::map<std::string, std::uint64_t> calls, launches;
    for (const auto& s : profiler::op_stats(profiler::events())) {
      calls[s.name] += s.count;
      launches[s.name] += s.kernels;
    }
    CHECK(calls["batch_norm"] == 1);
    CHECK(calls["batch_norm_backward"] == 1);
    CHECK(launches["batch_norm"] == 2);  // partial sums, then combine and apply
    CHECK(launches["batch_norm_backward"] == 2);
    // No reduction or element-wise step of the unfused form ran.
    CHECK(calls["mean"] == 0);
    CHECK(calls["sqrt"] == 0);
  }

  TEST_CASE("predict mode uses the running statistics; training refuses an empty batch") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      const NDArray x = nd::zeros({0, 3}, nd::float32, device);
      NDArray running_mean = nd::zeros({3}, nd::float32, device);
      NDArray running_var = nd::ones({3}, nd::float32, device);
      const NDArray gamma = nd::ones({3}, nd::float32, device);
      const NDArray beta = nd::zeros({3}, nd::float32, device);
      // Predict mode: (x - running_mean) / sqrt(running_var + eps) * gamma + beta.
      const NDArray ones = nd::ones({2, 3}, nd::float32, device);
      const auto p =
          nd::batch_norm(ones, gamma, beta, running_mean, running_var).to_vector<double>();
      CHECK(p[0] == doctest::Approx(1 / std::sqrt(1 + 1e-5)));
      // Training has no statistics to take from an empty batch.
      auto mode = ag::train_mode();
      CHECK(contains(
          error_of([&] { (void)nd::batch_norm(x, gamma, beta, running_mean, running_var); }),
          "at least one element per channel"));
    }
  }

  TEST_CASE("training batch_norm names what is wrong") {
    auto mode = ag::train_mode();
    const NDArray x = nd::ones({2, 3, 4});
    NDArray running_mean = nd::zeros({3}), running_var = nd::ones({3});
    CHECK(contains(error_of([&] {
                     (void)nd::batch_norm(x, nd::ones({4}), nd::zeros({3}), running_mean,
                                          running_var);
                   }),
                   "shape 3"));
    CHECK(contains(error_of([&] {
                     (void)nd::batch_norm(x, nd::ones({3}, nd::float64), nd::zeros({3}),
                                          running_mean, running_var);
                   }),
                   "float64"));
    CHECK(contains(error_of([&] {
                     (void)nd::batch_norm(x.astype(nd::int32), nd::ones({3}), nd::zeros({3}),
                                          running_mean, running_var);
                   }),
                   "int32"));
    if (device_count(DeviceKind::sim) > 0) {
      CHECK(contains(error_of([&] {
                       (void)nd::batch_norm(x.copyto(sim(0)), nd::ones({3}), nd::zeros({3}),
                                            running_mean, running_var);
                     }),
                     "different devices"));
    }
  }
}

}  // namespace tandem::testing
