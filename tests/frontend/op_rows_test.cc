// Every element-wise op record, tested from its row alone (op_rows.h), on every test device
// (cpu, the sim devices, cuda(0) when present; cpu and null(0) in the null-device program):
// values against the row's functor run on the host, for every dtype the row takes, and the
// gradient of every differentiable row against central differences. A new row is covered here
// with no test edit.
#include "op_rows.h"
#include "test_devices.h"

namespace tandem::testing {

namespace {

namespace ag = tandem::autograd;

std::vector<DType> dtypes_of(bool floating_only) {
  if (floating_only) return {nd::float32, nd::float64};
  return {nd::float32, nd::float64, nd::int32, nd::int64};
}

// Values in [-2, 2] (non-zero for integers: they may be divisors), or in [0.5, 2] when
// `positive`, rounded to the dtype.
Host operand(const Shape& shape, std::mt19937_64& rng, DType dtype, bool positive) {
  const bool integral = !ops::is_floating(dtype);
  Host h = random_host(shape, rng, positive ? 0.5 : -2.0, 2.0, integral);
  for (double& v : h.values) {
    if (integral && v == 0) v = positive ? 1 : -1;
    v = round_to(v, dtype);
  }
  return h;
}

// Distinct values at least 0.3 apart above 0.5, shuffled: no ties and no kinks within the
// finite-difference step, and inside every row's domain.
Host spread(const Shape& shape, std::mt19937_64& rng) {
  Host h{shape, {}};
  for (std::int64_t i = 0; i < shape.num_elements(); ++i)
    h.values.push_back(0.55 + 0.3 * static_cast<double>(i));
  std::shuffle(h.values.begin(), h.values.end(), rng);
  return h;
}

NDArray on(const Host& h, DType dtype, Device device) {
  return to_array(h, dtype).copyto(device);
}

constexpr double kStep = 1e-6;
constexpr double kTolerance = 1e-6;

// The gradients of L = sum(f(inputs) * weights) against central differences, every element of
// every input, in float64.
void check_gradient(const std::string& what, Device device, const std::vector<Host>& inputs,
                    const std::function<NDArray(const std::vector<NDArray>&)>& f,
                    std::mt19937_64& rng) {
  const auto arrays_of = [&](const std::vector<Host>& hosts) {
    std::vector<NDArray> arrays;
    for (const Host& h : hosts) arrays.push_back(on(h, nd::float64, device));
    return arrays;
  };
  const Shape out_shape = f(arrays_of(inputs)).shape();
  const NDArray weights = on(random_host(out_shape, rng, -1, 1), nd::float64, device);
  const auto loss = [&](const std::vector<Host>& hosts) {
    return nd::sum(f(arrays_of(hosts)) * weights).scalar<double>();
  };
  std::vector<NDArray> arrays = arrays_of(inputs);
  for (NDArray& a : arrays) a.attach_grad();
  {
    auto scope = ag::record();
    const NDArray out = f(arrays);
    REQUIRE(out.needs_grad());
    nd::sum(out * weights).backward();
  }
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const std::vector<double> analytic = arrays[i].grad().to_vector<double>();
    std::vector<Host> moved = inputs;
    for (std::size_t j = 0; j < analytic.size(); ++j) {
      const double original = inputs[i].values[j];
      moved[i].values[j] = original + kStep;
      const double plus = loss(moved);
      moved[i].values[j] = original - kStep;
      const double minus = loss(moved);
      moved[i].values[j] = original;
      const double numeric = (plus - minus) / (2 * kStep);
      const double error = std::fabs(analytic[j] - numeric) /
                           std::max({1.0, std::fabs(analytic[j]), std::fabs(numeric)});
      if (error > kTolerance) {
        FAIL_CHECK(what << " on " << to_string(device) << ": input " << i << " element " << j
                        << ": autograd " << analytic[j] << ", finite differences " << numeric);
      }
    }
  }
}

}  // namespace

TEST_SUITE("frontend.op_rows") {
  TEST_CASE("every unary row matches its functor on every device and dtype") {
    std::mt19937_64 rng(21);
    for (Device device : test_devices()) {
      for (const UnaryRow& row : unary_rows()) {
        for (DType dtype : dtypes_of(row.floating_only)) {
          const bool integral = !ops::is_floating(dtype);
          const Host h = operand({5, 7}, rng, dtype, !row.whole_line);
          const Host expected = host_unary(h, [&](double v) {
            return round_to(integral ? row.integer_reference(v) : row.reference(v), dtype);
          });
          const NDArray x = on(h, dtype, device);
          const NDArray y = row.function(x);
          CHECK(y.dtype() == dtype);
          CHECK(y.device() == device);
          check_matches(
              y, expected,
              std::string(row.name) + " " + dtype_name(dtype) + " on " + to_string(device));
          check_matches(row.function(x.T()), host_transpose(expected),
                        std::string(row.name) + " transposed on " + to_string(device));
        }
      }
    }
  }

  TEST_CASE("every binary row matches its functor on every device, dtype and broadcast") {
    std::mt19937_64 rng(22);
    const std::vector<std::pair<Shape, Shape>> shapes{
        {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{5}, {}}, {{0, 3}, {3}}};
    for (Device device : test_devices()) {
      for (const BinaryRow& row : binary_rows()) {
        for (DType dtype : dtypes_of(row.floating_only)) {
          const bool integral = !ops::is_floating(dtype);
          for (const auto& [sa, sb] : shapes) {
            const Host a = operand(sa, rng, dtype, row.floating_only);
            const Host b = operand(sb, rng, dtype, row.floating_only);
            const Host expected = host_binary(a, b, [&](double x, double y) {
              return round_to(integral ? row.integer_reference(x, y) : row.reference(x, y), dtype);
            });
            const NDArray out = row.function(on(a, dtype, device), on(b, dtype, device));
            CHECK(out.dtype() == dtype);
            check_matches(out, expected,
                          std::string(row.name) + " " + dtype_name(dtype) + " " + sa.to_string() +
                              " with " + sb.to_string() + " on " + to_string(device));
          }
        }
      }
    }
  }

  TEST_CASE("every differentiable row's gradient matches finite differences on every device") {
    std::mt19937_64 rng(23);
    const Shape m{2, 3};
    for (Device device : test_devices()) {
      for (const UnaryRow& row : unary_rows()) {
        if (!row.differentiable) continue;
        check_gradient(
            row.name, device, {spread(m, rng)},
            [&](const std::vector<NDArray>& x) { return row.function(x[0]); }, rng);
      }
      for (const BinaryRow& row : binary_rows()) {
        if (!row.differentiable) continue;
        for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{
                 {m, m}, {m, Shape{3}}, {Shape{2, 1}, Shape{1, 3}}}) {
          check_gradient(
              std::string(row.name) + " " + sa.to_string() + " " + sb.to_string(), device,
              {spread(sa, rng), random_host(sb, rng, 0.5, 2)},
              [&](const std::vector<NDArray>& x) { return row.function(x[0], x[1]); }, rng);
        }
      }
    }
  }

  TEST_CASE("a row without a gradient records nothing") {
    for (const BinaryRow& row : binary_rows()) {
      if (row.differentiable) continue;
      NDArray a = nd::array({1.0, 2.0}), b = nd::array({2.0, 1.0});
      a.attach_grad();
      auto scope = ag::record();
      CHECK_FALSE(row.function(a, b).needs_grad());
    }
  }
}

}  // namespace tandem::testing
