// The front end on every available device: each op on sim(0), sim(1) and cuda(0) (when present)
// gives the result it gives on the cpu; copies between every pair of devices; sync functions
// and printing from any device; the device checks; and a device block going back to its pool
// only after its last user has finished.
#include <algorithm>
#include <chrono>
#include <sstream>

#include "frontend_test_util.h"
#include "tandem/accel/accelerator.h"
#include "test_devices.h"

namespace tandem::testing {

namespace {

// Results from a device must be the cpu's: bit for bit where the same CPU kernels run (sim, and
// test backends), within the dtype's tolerance on cuda (a different summation order in
// reductions and gemm).
void check_same(const NDArray& on_device, const NDArray& on_cpu, const std::string& what) {
  INFO(what << " on " << to_string(on_device.device()));
  CHECK(on_device.shape() == on_cpu.shape());
  CHECK(on_device.dtype() == on_cpu.dtype());
  const auto got = on_device.to_vector<double>();
  const auto expected = on_cpu.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  int wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = runs_cpu_kernels(on_device.device())
                        ? (got[i] == expected[i] || (std::isnan(got[i]) && std::isnan(expected[i])))
                        : close(got[i], expected[i], on_device.dtype());
    if (!ok && wrong++ < 5) {
      FAIL_CHECK("element " << i << ": got " << got[i] << ", the cpu gives " << expected[i]);
    }
  }
  CHECK(wrong == 0);
}

using Program = std::function<NDArray(const std::vector<NDArray>&)>;

// Runs `program` on copies of `inputs` on every device and compares with the cpu's result.
void check_everywhere(const std::string& what, const std::vector<NDArray>& inputs,
                      const Program& program) {
  const NDArray reference = program(inputs);
  for (Device device : accelerators()) {
    std::vector<NDArray> moved;
    for (const NDArray& input : inputs) moved.push_back(input.copyto(device));
    const NDArray result = program(moved);
    CHECK(result.device() == device);
    check_same(result, reference, what);
  }
}

NDArray random_array(const Shape& shape, DType dtype, std::mt19937_64& rng, bool positive = false) {
  Host host = random_host(shape, rng, positive ? 1.0 : -4.0, 4.0, !ops::is_floating(dtype));
  if (!ops::is_floating(dtype)) {
    for (double& v : host.values) {
      if (v == 0) v = 3;  // integer divisors
    }
  }
  return to_array(host, dtype);
}

}  // namespace

TEST_SUITE("frontend.devices") {
  TEST_CASE("every available device is listed, named and usable") {
    CHECK(device_count(DeviceKind::cpu) == 1);
    CHECK(device_count(DeviceKind::sim) == accelerator_count(DeviceKind::sim));
    CHECK(device_count(DeviceKind::cuda) == accelerator_count(DeviceKind::cuda));
    for (Device device : test_devices()) {
      CHECK(device_available(device));
      const std::string name = device_name(device);
      CHECK(name.rfind(to_string(device), 0) == 0);
    }
    const Device missing = sim(device_count(DeviceKind::sim));
    CHECK_FALSE(device_available(missing));
    CHECK_THROWS_WITH_AS(nd::zeros({2}, missing), doctest::Contains(to_string(missing).c_str()),
                         tandem::Error);
  }

  TEST_CASE("a missing gpu is explained: backend not built, or built with no device or driver") {
    if (device_count(DeviceKind::cuda) > 0) {
      MESSAGE("this machine has a CUDA device: the no-device message is not exercised here");
      return;
    }
#ifdef TANDEM_HAVE_CUDA
    // A CUDA build on a machine without a GPU must not claim the backend is missing.
    CHECK_THROWS_WITH_AS(nd::ones({3}, cuda(0)),
                         doctest::Contains("gpu backend is built, but the CUDA runtime found no "
                                           "device or no driver"),
                         tandem::Error);
#else
    CHECK_THROWS_WITH_AS(nd::ones({3}, cuda(0)), doctest::Contains("this build has no gpu backend"),
                         tandem::Error);
#endif
  }

  TEST_CASE("element-wise ops on every device equal the cpu's") {
    std::mt19937_64 rng(11);
    for (DType dtype : {nd::float32, nd::float64, nd::int32, nd::int64}) {
      const NDArray a = random_array({5, 7}, dtype, rng);
      const NDArray b = random_array({5, 7}, dtype, rng);
      const NDArray row = random_array({7}, dtype, rng);
      const std::string type = dtype_name(dtype);
      check_everywhere("add/sub/mul " + type, {a, b},
                       [](const auto& x) { return (x[0] + x[1]) * x[0] - x[1]; });
      check_everywhere("divide " + type, {a, b}, [](const auto& x) { return x[0] / x[1]; });
      check_everywhere("maximum/minimum " + type, {a, b}, [](const auto& x) {
        return nd::maximum(x[0], x[1]) + nd::minimum(x[0], 1.0);
      });
      check_everywhere("comparisons " + type, {a, b}, [](const auto& x) {
        return (x[0] < x[1]) + (x[0] >= x[1]) * 2 + (x[0] == 1.0) * 4;
      });
      check_everywhere("broadcast " + type, {a, row}, [](const auto& x) { return x[0] * x[1]; });
      check_everywhere("scalars " + type, {a},
                       [](const auto& x) { return 3.0 - (x[0] * 2 + 1) / 2.0; });
      check_everywhere("negative/abs/square/relu " + type, {a}, [](const auto& x) {
        return nd::negative(x[0]) + nd::abs(x[0]) + nd::square(x[0]) + nd::relu(x[0]);
      });
      check_everywhere("strided views " + type, {a, b}, [](const auto& x) {
        return x[0].slice(0, 5, 2) + x[1].slice(1, 4).slice(0, 3, 1).T().T();
      });
      check_everywhere("in place " + type, {a, b}, [](const auto& x) {
        NDArray target = x[0].copy();
        target += x[1];
        target *= 2;
        target.slice(1, 3) -= x[1].slice(0, 2);
        return target;
      });
      check_everywhere("assign " + type, {a, row}, [](const auto& x) {
        NDArray target = nd::zeros(x[0].shape(), x[0].dtype(), x[0].device());
        target.slice(0, 2).assign(x[1]);
        target[4].assign(7.0);
        return target;
      });
    }
    std::mt19937_64 rng2(12);
    for (DType dtype : {nd::float32, nd::float64}) {
      const NDArray p = random_array({4, 9}, dtype, rng2, true);
      check_everywhere("transcendental " + std::string(dtype_name(dtype)), {p}, [](const auto& x) {
        return nd::exp(x[0] / 4) + nd::log(x[0]) + nd::sqrt(x[0]) + nd::sigmoid(x[0]) +
               nd::tanh(x[0]) + nd::power(x[0], 1.5);
      });
    }
  }

  TEST_CASE("creation and random draws on every device equal the cpu's") {
    for (Device device : accelerators()) {
      INFO(to_string(device));
      check_same(nd::zeros({3, 4}, nd::int32, device), nd::zeros({3, 4}, nd::int32), "zeros");
      check_same(nd::ones({5}, device), nd::ones({5}), "ones");
      check_same(nd::full({2, 2}, 2.5, nd::float64, device), nd::full({2, 2}, 2.5, nd::float64),
                 "full");
      check_same(nd::arange(1, 40, 0.5, nd::float32, device), nd::arange(1, 40, 0.5), "arange");
      check_same(nd::array({{1, 2}, {3, 4}}, device), nd::array({{1, 2}, {3, 4}}), "array");
      check_same(nd::from_vector(std::vector<std::int64_t>{1, -2, 3}, device),
                 nd::from_vector(std::vector<std::int64_t>{1, -2, 3}), "from_vector");
      // One seed, one stream of numbers, whatever the device: draws alternate between devices.
      nd::random::Generator on_device(42), on_cpu(42);
      for (int i = 0; i < 3; ++i) {
        const NDArray d = nd::random::uniform({100}, {.device = device, .generator = &on_device});
        const NDArray c = nd::random::uniform({100}, {.generator = &on_cpu});
        check_same(d, c, "random.uniform");
        const NDArray dn = nd::random::normal(
            {33},
            {.dtype = nd::float64, .device = i == 1 ? cpu() : device, .generator = &on_device});
        const NDArray cn = nd::random::normal({33}, {.dtype = nd::float64, .generator = &on_cpu});
        check_same(dn, cn, "random.normal");
      }
    }
  }

  TEST_CASE("dot, reductions, concat, astype and reshape on every device equal the cpu's") {
    std::mt19937_64 rng(13);
    for (DType dtype : {nd::float32, nd::float64, nd::int64}) {
      const std::string type = dtype_name(dtype);
      const NDArray m = random_array({6, 5}, dtype, rng);
      const NDArray n = random_array({5, 4}, dtype, rng);
      const NDArray v = random_array({5}, dtype, rng);
      check_everywhere("dot " + type, {m, n}, [](const auto& x) { return nd::dot(x[0], x[1]); });
      check_everywhere("dot mv " + type, {m, v}, [](const auto& x) { return nd::dot(x[0], x[1]); });
      check_everywhere("dot transposed " + type, {m},
                       [](const auto& x) { return nd::dot(x[0].T(), x[0]); });
      check_everywhere("sum/max/min " + type, {m}, [](const auto& x) {
        return nd::concat({x[0].sum(), x[0].max(), x[0].min()}, 0);
      });
      check_everywhere("axis reductions " + type, {m}, [](const auto& x) {
        return nd::concat({nd::sum(x[0], 0), nd::max(x[0], 0), nd::min(x[0].T(), 1)}, 0);
      });
      check_everywhere("argmax " + type, {m}, [](const auto& x) {
        return nd::concat({x[0].argmax(), nd::argmax(x[0], 1)}, 0);
      });
      check_everywhere("concat " + type, {m, n}, [](const auto& x) {
        return nd::concat({x[0].T(), x[1]}, 1);
      });
      check_everywhere("reshape/astype " + type, {m}, [](const auto& x) {
        return x[0].reshape({3, -1}).astype(nd::float64).T().reshape({-1});
      });
    }
    const NDArray f = random_array({8, 3}, nd::float32, rng);
    check_everywhere("mean/norm", {f}, [](const auto& x) {
      return nd::concat({x[0].mean(), x[0].norm(), nd::mean(x[0], 1), nd::norm(x[0], 0)}, 0);
    });
  }

  TEST_CASE("uint8 arrays: made, moved, converted with astype and printed on every device") {
    const std::vector<std::uint8_t> bytes{0, 1, 7, 128, 200, 255};
    const std::vector<double> as_doubles{0, 1, 7, 128, 200, 255};
    const NDArray host = nd::from_vector(bytes, {2, 3});
    CHECK(host.dtype() == nd::uint8);
    for (Device device : test_devices()) {
      INFO(to_string(device));
      const NDArray here = host.copyto(device);
      CHECK(here.dtype() == nd::uint8);
      CHECK(here.to_vector<std::uint8_t>() == bytes);
      // Converted on the device, through a strided view too.
      const NDArray f32 = here.astype(nd::float32);
      CHECK(f32.device() == device);
      CHECK(f32.to_vector<double>() == as_doubles);
      CHECK(here.T().astype(nd::float64).to_vector<double>() ==
            host.T().astype(nd::float64).to_vector<double>());
      // Back to uint8: floats saturate to 0..255 and truncate.
      const NDArray back = nd::array({-3.0, 0.9, 254.5, 300.0}, device).astype(nd::uint8);
      CHECK(back.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 0, 254, 255});
      CHECK(nd::zeros({3}, nd::uint8, device).to_vector<std::int32_t>() ==
            std::vector<std::int32_t>{0, 0, 0});
      std::ostringstream text;
      text << here;
      CHECK(text.str() ==
            "[[  0   1   7]\n [128 200 255]]\n<NDArray 2x3 @" + to_string(device) + ">");
      // Storage only: arithmetic is refused at the call, naming the dtype and the fix.
      CHECK_THROWS_WITH_AS(here + here, doctest::Contains("add is not defined for uint8"),
                           tandem::Error);
      CHECK_THROWS_WITH_AS(here * 2.0, doctest::Contains("astype(nd::float32)"), tandem::Error);
      CHECK_THROWS_WITH_AS(here.sum(), doctest::Contains("uint8"), tandem::Error);
      CHECK_THROWS_WITH_AS(nd::exp(here), doctest::Contains("uint8"), tandem::Error);
      CHECK_THROWS_WITH_AS(nd::arange(0, 4, 1, nd::uint8, device),
                           doctest::Contains("arange is not defined for uint8"), tandem::Error);
      CHECK_THROWS_WITH_AS(here + here.astype(nd::float32), doctest::Contains("dtype mismatch"),
                           tandem::Error);
    }
  }

  TEST_CASE("copies between every pair of devices keep the values") {
    const std::vector<Device> devices = test_devices();
    std::mt19937_64 rng(14);
    const NDArray source = random_array({33, 17}, nd::float64, rng);
    const std::vector<double> expected = source.to_vector<double>();
    for (Device from : devices) {
      const NDArray here = source.copyto(from);
      for (Device to : devices) {
        INFO(to_string(from) << " -> " << to_string(to));
        if (from.kind != to.kind && from.is_accelerator() && to.is_accelerator()) {
          CHECK_THROWS_AS(here.copyto(to), tandem::Error);
          continue;
        }
        const NDArray there = here.copyto(to);
        CHECK(there.device() == to);
        CHECK_FALSE(there.shares_storage_with(here));
        CHECK(there.to_vector<double>() == expected);
        // Views: a strided source, and a strided destination.
        CHECK(here.T().copyto(to).to_vector<double>() == source.T().to_vector<double>());
        NDArray target = nd::zeros({17, 33}, nd::float64, to);
        here.T().copyto(target.T().T());
        CHECK(target.to_vector<double>() == source.T().to_vector<double>());
        NDArray rows = nd::zeros({66, 17}, nd::float64, to);
        here.copyto(rows.slice(0, 66, 2));
        CHECK(rows.slice(0, 66, 2).to_vector<double>() == expected);
        CHECK(rows.slice(1, 66, 2).sum().scalar() == 0.0);
        // as_in_context: the same array when already there.
        CHECK(here.as_in_context(from).shares_storage_with(here));
        CHECK(here.as_in_context(to).device() == to);
      }
    }
  }

  TEST_CASE("accelerator -> cpu -> accelerator with no sync in between reads the copied values") {
    // The H2D copy is queued while the D2H copy that fills `host` still waits on its stream:
    // the H2D op must read the host bytes in stream order, after that copy, not at its launch.
    const std::int64_t n = scaled(8 << 20, 1 << 16);
    for (Device device : accelerators()) {
      for (int round = 0; round < 3; ++round) {
        INFO(to_string(device) << ", round " << round);
        const NDArray x = nd::full({n}, 3.0, nd::float32, device);
        const NDArray host = x.copyto(cpu());
        const NDArray back = host.copyto(device);
        const std::vector<float> values = back.to_vector<float>();
        CHECK(std::count(values.begin(), values.end(), 3.0f) == n);
      }
    }
  }

  TEST_CASE("cpu -> accelerator -> cpu: a later cpu write waits for the copy to read the array") {
    const std::int64_t n = scaled(8 << 20, 1 << 16);
    for (Device device : accelerators()) {
      INFO(to_string(device));
      NDArray host = nd::full({n}, 3.0, nd::float32, cpu());
      const NDArray there = host.copyto(device);
      host += 1.0;  // a cpu write after the H2D op's read of `host`
      const NDArray again = there.copyto(cpu());
      const std::vector<float> values = again.to_vector<float>();
      CHECK(std::count(values.begin(), values.end(), 3.0f) == n);
      const std::vector<float> updated = host.to_vector<float>();
      CHECK(std::count(updated.begin(), updated.end(), 4.0f) == n);
    }
  }

  TEST_CASE("sync functions and printing work from any device") {
    for (Device device : accelerators()) {
      const NDArray a = nd::array({{1, 2, 3}, {4, 5, 6}}, device);
      a.wait_to_read();
      a.wait_to_write();
      CHECK(a.to_vector<int>() == std::vector<int>{1, 2, 3, 4, 5, 6});
      CHECK(a.sum().scalar() == 21.0);
      CHECK(a[1].to_vector<float>() == std::vector<float>{4, 5, 6});
      std::ostringstream text;
      text << a;
      CHECK(text.str() == "[[1. 2. 3.]\n [4. 5. 6.]]\n<NDArray 2x3 @" + to_string(device) + ">");
      nd::waitall();
    }
  }

  TEST_CASE("inputs on different devices are refused at the call, naming both") {
    for (Device device : accelerators()) {
      const NDArray on_cpu = nd::ones({2});
      const NDArray elsewhere = nd::ones({2}, device);
      const std::string both = "cpu(0) and " + to_string(device);
      CHECK_THROWS_WITH_AS(on_cpu + elsewhere, doctest::Contains(both.c_str()), tandem::Error);
      CHECK_THROWS_WITH_AS(nd::dot(on_cpu, elsewhere), doctest::Contains(both.c_str()),
                           tandem::Error);
      NDArray target = nd::zeros({2}, device);
      CHECK_THROWS_WITH_AS(target += on_cpu, doctest::Contains(to_string(device).c_str()),
                           tandem::Error);
    }
  }

  TEST_CASE("errors of device ops surface at the next sync point, and the device keeps working") {
    for (Device device : accelerators()) {
      const NDArray a = nd::from_vector(std::vector<std::int32_t>{4, 5}, device);
      const NDArray zero = nd::from_vector(std::vector<std::int32_t>{1, 0}, device);
      const NDArray q = a / zero;  // integer division by zero: an error of the kernel
      CHECK_THROWS_AS(q.wait_to_read(), tandem::Error);
      try {
        nd::waitall();  // the error was seen by wait_to_read; waitall may or may not repeat it
      } catch (const tandem::Error&) {
      }
      CHECK((a + 1).to_vector<int>() == std::vector<int>{5, 6});
    }
  }

  TEST_CASE("a device block goes back to the pool only after its last user has finished") {
    for (Device device : accelerators()) {
      if (device.kind != DeviceKind::sim) continue;  // the timing needs the sim model
      INFO(to_string(device));
      MemoryPool& pool = accelerator(device).device_pool();
      nd::waitall();
      NDArray input = nd::ones({1024, 1024}, device);
      input.wait_to_read();
      void* block = input.view().data;
      const Var var = input.var();
      // Reads `input` for milliseconds (modelled 2 GFLOP, and longer in real time on the CPU).
      const NDArray slow = nd::dot(input, input);
      input = NDArray();  // the last handle: the deleter runs after `slow` has finished
      // Arrays of the same size class allocate at their launch, microseconds from now, while
      // `slow` still reads the block: they must get other blocks, except the one that takes
      // the block together with its var (stream-ordered reuse), whose first write the var
      // orders after `slow`.
      std::vector<NDArray> fresh;
      for (int i = 0; i < 4; ++i) fresh.push_back(nd::zeros({1024, 1024}, device));
      for (const NDArray& f : fresh) {
        f.wait_to_read();
        CHECK((f.view().data != block || f.var() == var));
      }
      CHECK(slow[0][0].scalar() == 1024.0);
      fresh.clear();
      nd::waitall();
      CHECK(pool.stats().bytes_cached > 0);
    }
  }
}

}  // namespace tandem::testing
