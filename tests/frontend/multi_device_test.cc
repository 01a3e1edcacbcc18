// split_and_load and allreduce (tandem/nd/multi_device.h) over sim(0), sim(1), the cpu, and
// cuda(0) when there is one: the parts and the sums equal a host reference, every device gets
// the same values, and bad input is refused at the call with a message naming what was wrong.
#include <algorithm>

#include "frontend_test_util.h"

namespace tandem::testing {

namespace {

std::vector<Device> data_parallel_devices() {
  std::vector<Device> devices;
  for (int i = 0; i < std::min(2, device_count(DeviceKind::sim)); ++i) devices.push_back(sim(i));
  devices.push_back(cpu());
  return devices;
}

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST_SUITE("frontend.multi_device") {
  TEST_CASE("split_and_load puts consecutive rows of the batch on each device") {
    std::mt19937_64 rng(11);
    const Host host = random_host(Shape{12, 5}, rng);  // 12 rows: 2 or 3 devices
    const NDArray batch = to_array(host, DType::float32);
    const std::vector<Device> devices = data_parallel_devices();
    const std::vector<NDArray> parts = nd::split_and_load(batch, devices);
    REQUIRE(parts.size() == devices.size());
    const auto rows = static_cast<std::int64_t>(12 / devices.size());
    for (std::size_t i = 0; i < parts.size(); ++i) {
      CHECK(parts[i].device() == devices[i]);
      const auto begin = static_cast<std::int64_t>(i) * rows;
      check_matches(parts[i], host_slice(host, begin, begin + rows, 1), "part");
    }
  }

  TEST_CASE("split_and_load without even_split gives the first parts one row more") {
    std::mt19937_64 rng(12);
    const Host host = random_host(Shape{7, 3}, rng);
    const NDArray batch = to_array(host, DType::float64);
    const std::vector<Device> devices{sim(0), sim(1), cpu()};
    const std::vector<NDArray> parts = nd::split_and_load(batch, devices, false);
    REQUIRE(parts.size() == 3);
    CHECK(parts[0].shape() == Shape{3, 3});
    CHECK(parts[1].shape() == Shape{2, 3});
    CHECK(parts[2].shape() == Shape{2, 3});
    check_matches(parts[0], host_slice(host, 0, 3, 1), "part 0");
    check_matches(parts[1], host_slice(host, 3, 5, 1), "part 1");
    check_matches(parts[2], host_slice(host, 5, 7, 1), "part 2");
  }

  TEST_CASE("allreduce leaves the sum, bit-identical, on every device") {
    std::mt19937_64 rng(13);
    const std::vector<Device> devices = data_parallel_devices();
    std::vector<Host> hosts;
    std::vector<NDArray> arrays;
    for (Device device : devices) {
      hosts.push_back(random_host(Shape{4, 6}, rng));
      arrays.push_back(to_array(hosts.back(), DType::float64).copyto(device));
    }
    Host expected = hosts[0];
    for (std::size_t i = 1; i < hosts.size(); ++i) {
      for (std::size_t k = 0; k < expected.values.size(); ++k)
        expected.values[k] += hosts[i].values[k];
    }
    nd::allreduce(arrays);
    const std::vector<double> first = arrays[0].to_vector<double>();
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      CHECK(arrays[i].device() == devices[i]);
      check_matches(arrays[i], expected, "sum on " + to_string(devices[i]));
      CHECK(arrays[i].to_vector<double>() == first);
    }
  }

  TEST_CASE("two allreduce calls over an accelerator and the cpu back to back give 4") {
    // The second call's H2D copy of the cpu array must read what the first call's D2H copy
    // wrote: both are queued before either has run.
    if (device_count(DeviceKind::sim) == 0) {
      MESSAGE("SKIPPED: no sim device");
      return;
    }
    const std::int64_t n = scaled(1 << 20, 1 << 14);
    for (int round = 0; round < 3; ++round) {
      INFO("round " << round);
      const std::vector<NDArray> arrays{nd::ones({n}, sim(0)), nd::ones({n}, cpu())};
      nd::allreduce(arrays);
      nd::allreduce(arrays);
      for (const NDArray& array : arrays) {
        const std::vector<float> values = array.to_vector<float>();
        CHECK(std::count(values.begin(), values.end(), 4.0f) == n);
      }
    }
  }

  TEST_CASE("a data-parallel step over the devices equals the one-device result") {
    std::mt19937_64 rng(14);
    const NDArray batch = to_array(random_host(Shape{18, 8}, rng), DType::float64);
    const NDArray weights = to_array(random_host(Shape{8, 8}, rng), DType::float64);
    const NDArray expected = nd::dot(batch.T(), nd::dot(batch, weights));
    const std::vector<Device> devices = data_parallel_devices();
    std::vector<NDArray> grads;
    for (const NDArray& part : nd::split_and_load(batch, devices)) {
      const NDArray w = weights.as_in_context(part.device());
      grads.push_back(nd::dot(part.T(), nd::dot(part, w)));
    }
    nd::allreduce(grads);
    const std::vector<double> want = expected.to_vector<double>();
    for (const NDArray& grad : grads) {
      const std::vector<double> got = grad.to_vector<double>();
      REQUIRE(got.size() == want.size());
      for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(want[k]));
    }
  }

  TEST_CASE("bad input to split_and_load and allreduce is refused at the call") {
    const NDArray batch = nd::zeros({5, 2});
    CHECK(message_of([&] { nd::split_and_load(batch, {}); }).find("device list is empty") !=
          std::string::npos);
    const std::string uneven = message_of([&] { nd::split_and_load(batch, {sim(0), sim(1)}); });
    CHECK(uneven.find("5x2") != std::string::npos);
    CHECK(uneven.find("2 devices") != std::string::npos);
    CHECK(message_of([&] {
            nd::split_and_load(nd::zeros({1, 2}), {sim(0), sim(1)});
          }).find("fewer rows") != std::string::npos);
    CHECK(message_of([] { nd::allreduce({}); }).find("empty") != std::string::npos);
    const std::string shapes = message_of([] {
      nd::allreduce({nd::zeros({2, 3}, sim(0)), nd::zeros({3, 2}, sim(1))});
    });
    CHECK(shapes.find("2x3") != std::string::npos);
    CHECK(shapes.find("3x2") != std::string::npos);
    CHECK_THROWS_AS(nd::allreduce({nd::zeros({2}, sim(0)), nd::zeros({2}, DType::int32, sim(1))}),
                    Error);
    // NCCL forced on arrays it cannot sum: refused at the call, saying why.
    const std::string nccl = message_of([] {
      nd::allreduce({nd::zeros({2}, sim(0)), nd::zeros({2}, sim(1))}, nd::AllreduceAlgorithm::nccl);
    });
    CHECK(nccl.find("AllreduceAlgorithm::nccl cannot be used") != std::string::npos);
#ifdef TANDEM_HAVE_NCCL
    CHECK(nccl.find("gpu(i) arrays only, and one is on sim(0)") != std::string::npos);
#else
    CHECK(nccl.find("no NCCL") != std::string::npos);
#endif
    nd::waitall();
  }
}

}  // namespace tandem::testing
