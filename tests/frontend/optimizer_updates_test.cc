// nd::sgd_update, sgd_mom_update and adam_update: one fused op each, bit for bit the unfused
// element-wise ops they replace, on every test device (cuda(0) when present), float32 and
// float64, dense and strided; one op per update (profiled on sim); the errors.
#include "frontend_test_util.h"
#include "tandem/profiler.h"
#include "test_devices.h"

#include <map>

namespace tandem::testing {

namespace {

NDArray random_array(const Shape& shape, DType dtype, Device device, std::uint64_t seed,
                     double low = -1, double high = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(low, high);
  std::vector<double> values(static_cast<std::size_t>(shape.num_elements()));
  for (double& v : values) v = u(rng);
  return nd::from_vector(values, shape, device).astype(dtype);
}

void check_same_bits(const NDArray& fused, const NDArray& unfused, const char* what) {
  CAPTURE(what);
  CHECK(fused.to_vector<double>() == unfused.to_vector<double>());
}

// Three steps of each update, fused against the unfused ops written out here.
void check_updates(Device device, DType dtype, bool strided) {
  CAPTURE(to_string(device));
  CAPTURE(dtype_name(dtype));
  CAPTURE(strided);
  const Shape shape{37, 5};  // odd sizes: no vector width divides them
  const auto make = [&](std::uint64_t seed, double low = -1, double high = 1) {
    NDArray a = random_array(strided ? Shape{5, 37} : shape, dtype, device, seed, low, high);
    return strided ? nd::transpose(a) : a;
  };
  const NDArray grad = make(1);
  for (const double wd : {0.0, 1e-3}) {
    CAPTURE(wd);
    const nd::SgdUpdateOptions options{
        .learning_rate = 0.1, .momentum = 0.9, .wd = wd, .rescale_grad = 1.0 / 64};
    // SGD without momentum.
    NDArray w = make(2), w_ref = make(2);
    for (int step = 0; step < 3; ++step) {
      nd::sgd_update(w, grad, options);
      const double decay = 0.1 * wd;
      if (decay != 0.0) w_ref *= 1.0 - decay;
      w_ref -= grad * (0.1 / 64);
    }
    check_same_bits(w, w_ref, "sgd_update");
    // SGD with momentum.
    NDArray m = nd::zeros_like(w), m_ref = nd::zeros_like(w);
    if (strided) {
      m = make(3) * 0.0;
      m_ref = make(3) * 0.0;
    }
    w = make(2);
    w_ref = make(2);
    for (int step = 0; step < 3; ++step) {
      nd::sgd_mom_update(w, grad, m, options);
      m_ref *= 0.9;
      m_ref -= grad * (0.1 / 64);
      if (wd != 0.0) m_ref -= w_ref * (0.1 * wd);
      w_ref += m_ref;
    }
    check_same_bits(w, w_ref, "sgd_mom_update weight");
    check_same_bits(m, m_ref, "sgd_mom_update momentum");
    // Adam.
    NDArray mean = nd::zeros_like(w), var = nd::zeros_like(w);
    NDArray mean_ref = nd::zeros_like(w), var_ref = nd::zeros_like(w);
    w = make(2);
    w_ref = make(2);
    for (int step = 1; step <= 3; ++step) {
      const nd::AdamUpdateOptions adam{.learning_rate = 1e-3 * step,
                                       .beta1 = 0.9,
                                       .beta2 = 0.999,
                                       .epsilon = 1e-8,
                                       .wd = wd,
                                       .rescale_grad = 1.0 / 64};
      nd::adam_update(w, grad, mean, var, adam);
      NDArray g = grad * (1.0 / 64);
      if (wd != 0.0) g = g + w_ref * wd;
      mean_ref *= 0.9;
      mean_ref += g * (1.0 - 0.9);
      var_ref *= 0.999;
      var_ref += nd::square(g) * (1.0 - 0.999);
      w_ref -= mean_ref / (nd::sqrt(var_ref) + 1e-8) * (1e-3 * step);
    }
    check_same_bits(w, w_ref, "adam_update weight");
    check_same_bits(mean, mean_ref, "adam_update mean");
    check_same_bits(var, var_ref, "adam_update var");
  }
}

}  // namespace

TEST_SUITE("frontend.optimizer_updates") {
  TEST_CASE("fused updates give the bits of the unfused ops on every device") {
    for (Device device : test_devices()) {
      for (DType dtype : {nd::float32, nd::float64}) {
        check_updates(device, dtype, false);
        check_updates(device, dtype, true);
      }
    }
  }

  TEST_CASE("an update is one op; SGD and Adam queue one per parameter") {
    if (device_count(DeviceKind::sim) == 0) return;
    const Device device = sim(0);
    NDArray w = nd::ones({64}, nd::float32, device), g = nd::ones({64}, nd::float32, device);
    NDArray m = nd::zeros({64}, nd::float32, device), v = nd::zeros({64}, nd::float32, device);
    nd::waitall();
    profiler::clear();
    profiler::start();
    nd::sgd_update(w, g, {.learning_rate = 0.1, .wd = 1e-4});
    nd::sgd_mom_update(w, g, m, {.learning_rate = 0.1, .momentum = 0.9, .wd = 1e-4});
    nd::adam_update(w, g, m, v, {.learning_rate = 1e-3, .wd = 1e-4, .rescale_grad = 0.5});
    nd::waitall();
    profiler::stop();
    std::map<std::string, std::uint64_t> calls, launches;
    std::uint64_t total = 0;
    for (const auto& s : profiler::op_stats(profiler::events())) {
      calls[s.name] += s.count;
      launches[s.name] += s.kernels;
      total += s.count;
    }
    CHECK(calls["sgd_update"] == 1);
    CHECK(calls["sgd_mom_update"] == 1);
    CHECK(calls["adam_update"] == 1);
    CHECK(launches["adam_update"] == 1);
    CHECK(total == 3);
  }

  TEST_CASE("updates name what is wrong") {
    NDArray w = nd::ones({4}), m = nd::zeros({4});
    CHECK(contains(error_of([&] { nd::sgd_update(w, nd::ones({5}), {}); }), "shape 4"));
    CHECK(
        contains(error_of([&] { nd::sgd_update(w, nd::ones({4}, nd::float64), {}); }), "float64"));
    NDArray wi = nd::ones({4}, nd::int32);
    CHECK(contains(error_of([&] { nd::sgd_update(wi, nd::ones({4}, nd::int32), {}); }), "int32"));
    if (device_count(DeviceKind::sim) > 0) {
      CHECK(contains(
          error_of([&] { nd::sgd_mom_update(w, nd::ones({4}, nd::float32, sim(0)), m, {}); }),
          "different devices"));
    }
    NDArray mean = nd::zeros({4}), var = nd::zeros({3});
    CHECK(contains(error_of([&] { nd::adam_update(w, nd::ones({4}), mean, var, {}); }),
                   "shape 4, got 3"));
  }
}

}  // namespace tandem::testing
