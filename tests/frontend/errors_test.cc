// Every mistake the call can see throws tandem::Error at the call, with a message that names
// what was wrong; errors inside kernels surface at the next sync point.
#include <algorithm>

#include "frontend_test_util.h"

namespace tandem::testing {

TEST_SUITE("frontend.errors") {
  TEST_CASE("an accelerator that is not present is named in the error") {
    // Past the last device of each kind (sim devices exist by default, cuda ones with a GPU).
    const int sims = device_count(DeviceKind::sim), gpus = device_count(DeviceKind::cuda);
    const std::string missing_sim = to_string(sim(sims)), missing_gpu = to_string(cuda(gpus));
    const std::string gpu_count = "device_count(gpu) == " + std::to_string(gpus);
    check_error([] { nd::zeros({2}, cuda(device_count(DeviceKind::cuda))); },
                {"zeros", missing_gpu, "not available", gpu_count});
    check_error([] { nd::random::uniform({2}, sim(device_count(DeviceKind::sim))); },
                {"random.uniform", missing_sim});
    check_error([] { nd::ones({2}).copyto(cuda(device_count(DeviceKind::cuda) + 1)); },
                {"copyto", to_string(cuda(gpus + 1))});
    check_error([] { nd::ones({2}).as_in_context(sim(device_count(DeviceKind::sim))); },
                {missing_sim});
    check_error([] { nd::zeros({2}, cpu(1)); }, {"cpu(1)", "device_count(cpu) == 1"});
    check_error([] { device_name(cuda(device_count(DeviceKind::cuda))); }, {missing_gpu});
  }

  TEST_CASE("incompatible shapes name both shapes") {
    check_error([] { nd::ones({2, 3}) + nd::ones({4, 3}); }, {"add", "2x3", "4x3", "broadcast"});
    check_error([] { nd::maximum(nd::ones({5}), nd::ones({6})); }, {"maximum", "5", "6"});
    check_error(
        [] {
          nd::dot(nd::ones({2, 3}), nd::ones({4, 5}));
        },
        {"dot", "2x3", "4x5", "not aligned"});
    check_error([] { nd::dot(nd::ones({2, 3, 4}), nd::ones({4})); }, {"dot", "2x3x4"});
    check_error([] { nd::ones({2, 3}).reshape({4, 2}); }, {"reshape", "2x3", "4x2"});
    check_error([] { nd::ones({2, 3}).reshape({-1, 4}); }, {"reshape", "-1"});
    check_error(
        [] {
          nd::concat({nd::ones({2, 3}), nd::ones({2, 4})}, 0);
        },
        {"concat", "2x3", "2x4"});
    check_error(
        [] {
          nd::NDArray x = nd::ones({2, 3});
          x += nd::ones({4, 2, 3});
        },
        {"add", "2x3", "4x2x3"});
    check_error([] { nd::ones({2, 3}).assign(nd::ones({3, 3})); }, {"assign", "3x3", "2x3"});
    check_error([] { nd::ones({2}).copyto(nd::zeros({3})); }, {"copyto", "3", "2"});
    check_error(
        [] {
          nd::from_vector(std::vector<float>{1, 2, 3}, {2, 2});
        },
        {"from_vector", "2x2"});
    check_error([] { nd::ones({3})[3]; }, {"index 3", "size 3"});
  }

  TEST_CASE("dtype mismatches name both dtypes") {
    check_error([] { nd::ones({2}) + nd::ones({2}, nd::float64); }, {"add", "float32", "float64"});
    check_error(
        [] {
          nd::dot(nd::ones({2, 2}, nd::int32), nd::ones({2, 2}));
        },
        {"dot", "int32", "float32"});
    check_error([] { nd::ones({2}).assign(nd::ones({2}, nd::int64)); }, {"assign", "int64"});
    check_error([] { nd::exp(nd::ones({2}, nd::int32)); }, {"exp", "int32"});
    check_error([] { nd::norm(nd::ones({2}, nd::int64)); }, {"norm", "int64"});
    check_error([] { nd::random::uniform({2}, {.dtype = nd::int32}); },
                {"random.uniform", "int32"});
  }

  TEST_CASE("reduction axes out of range name the axis and the shape") {
    check_error([] { nd::sum(nd::ones({2, 3}), 2); }, {"sum", "axis 2", "2x3"});
    check_error([] { nd::argmax(nd::ones({2, 3}), -3); }, {"argmax", "axis -3"});
    check_error([] { nd::concat({nd::ones({2})}, 1); }, {"concat", "axis 1"});
    check_error([] { nd::transpose(nd::ones({2, 3}), {0, 0}); }, {"transpose", "repeat"});
    check_error([] { nd::max(nd::zeros({0})); }, {"max", "zero elements"});
  }

  TEST_CASE("sizes that overflow, negative sizes, and absurd sizes") {
    check_error(
        [] {
          nd::zeros({1 << 30, 1 << 30, 1 << 30});
        },
        {"zeros", "1073741824x1073741824x1073741824", "overflow"});
    check_error([] { nd::empty({std::int64_t{1} << 62}, nd::float64); }, {"empty", "overflow"});
    // No element, but strides (products of the other dimensions) that overflow.
    check_error(
        [] {
          nd::zeros({0, std::int64_t{1} << 62, std::int64_t{1} << 62});
        },
        {"zeros", "0x4611686018427387904x4611686018427387904", "strides would overflow"});
    CHECK(nd::zeros({0, 1 << 20, 1 << 20}).size() == 0);  // empty and representable: fine
    check_error([] { nd::ones({2, -1}); }, {"ones", "negative"});
    check_error([] { nd::zeros({std::int64_t{1} << 50}); }, {"zeros", "more than"});
    check_error([] { nd::arange(0, 1e30, 1e-30); }, {"arange", "overflow"});
    check_error([] { nd::Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}; }, {"at most 8 dimensions"});
  }

  TEST_CASE("misuse of handles and views") {
    check_error([] { nd::NDArray() + nd::ones({1}); }, {"add", "null NDArray"});
    check_error([] { nd::NDArray().wait_to_read(); }, {"wait_to_read", "null"});
    check_error([] { nd::ones({2, 2}).scalar<float>(); }, {"scalar", "2x2"});
    check_error([] { nd::ones({3}).slice(0, 2, 0); }, {"slice", "step"});
    check_error([] { nd::ones({3}, nd::int32) / 0; }, {"divide", "integer division by zero"});
  }

  TEST_CASE("arrays of different engines cannot be mixed") {
    auto other = Engine::create(EngineConfig{.kind = EngineKind::naive});
    nd::NDArray mine = nd::ones({2});
    nd::NDArray theirs;
    {
      nd::EngineScope scope(*other);
      theirs = nd::ones({2});
    }
    check_error([&] { mine + theirs; }, {"add", "different engines"});
    theirs = nd::NDArray();
  }

  TEST_CASE("integer division by zero inside a kernel surfaces at the next sync point") {
    const NDArray zero_somewhere = nd::from_vector(std::vector<std::int32_t>{1, 0, 2});
    const NDArray y = nd::full({3}, 6, nd::int32) / zero_somewhere;  // returns: the error is later
    const NDArray z = y + 1;                                         // skipped: reads poisoned y
    check_error([&] { z.wait_to_read(); }, {"divide", "integer division by zero"});
    check_error([&] { y.to_vector<int>(); }, {"divide"});
    try {
      nd::waitall();  // the first unseen error, if not already thrown by the waits above
    } catch (const Error&) {
    }
    nd::waitall();  // each error is reported once by waitall; the engine keeps running
    // A later successful write clears the poison.
    NDArray w = y;
    w.assign(5.0);
    CHECK(w.to_vector<int>() == std::vector<int>{5, 5, 5});
    CHECK(std::isinf((nd::ones({1}) / 0).scalar<double>()));  // floats divide by zero into inf
  }

  TEST_CASE("a dtype value outside nd::DType is refused at the call, naming the value") {
    const auto bad = static_cast<DType>(99);
    check_error([&] { nd::zeros({2}, bad); }, {"zeros", "99 is not a dtype"});
    check_error([&] { nd::empty({2}, bad); }, {"empty", "99 is not a dtype"});
    check_error([&] { nd::full({2}, 1.0, bad); }, {"full", "99"});
    check_error([&] { nd::arange(0, 4, 1, bad); }, {"arange", "99"});
    check_error([&] { nd::ones({2}).astype(bad); }, {"astype", "99"});
    const float values[2] = {1, 2};
    check_error([&] { nd::from_host(values, 2, bad, {2}); }, {"from_vector", "99"});
    check_error([&] { nd::random::uniform({2}, {.dtype = bad}); }, {"random.uniform", "99"});
    check_error([&] { nd::zeros({2}, bad, sim(0)); }, {"zeros", "99"});
  }

  TEST_CASE("random parameters out of their domain are refused at the call") {
    check_error([] { nd::random::uniform(2.0, 1.0, {3}); },
                {"random.uniform", "low must not exceed high", "2.000000", "1.000000"});
    check_error([] { nd::random::uniform(0.0, INFINITY, {3}); }, {"random.uniform", "finite"});
    check_error([] { nd::random::uniform({3}, {.low = NAN}); }, {"random.uniform", "finite"});
    check_error([] { nd::random::normal(0.0, -1.0, {3}); },
                {"random.normal", "stddev must be at least 0", "-1.000000"});
    check_error([] { nd::random::normal(NAN, 1.0, {3}); }, {"random.normal", "finite"});
    check_error([] { nd::random::normal({3}, {.stddev = INFINITY, .device = sim(0)}); },
                {"random.normal", "finite"});
    // The edges are fine: an empty interval gives low, a zero deviation gives the mean.
    CHECK(nd::random::uniform(1.5, 1.5, {4}).to_vector<float>() == std::vector<float>(4, 1.5f));
    CHECK(nd::random::normal(2.0, 0.0, {4}).to_vector<float>() == std::vector<float>(4, 2.0f));
  }

  TEST_CASE("a write into part of a poisoned array keeps the whole array poisoned") {
    std::vector<Device> devices{cpu()};
    for (int i = 0; i < std::min(2, device_count(DeviceKind::sim)); ++i) devices.push_back(sim(i));
    for (Device device : devices) {
      INFO(to_string(device));
      const NDArray num = nd::full({4, 3}, 6, nd::int32, device);
      const NDArray zeros = nd::zeros({4, 3}, nd::int32, device);
      NDArray r = num / zeros;  // fails: r's memory holds whatever it held before
      r.slice(0, 1).assign(5.0);
      r[2].assign(nd::ones({3}, nd::int32, device));
      nd::ones({1, 3}, nd::int32).copyto(r.slice(3, 4));  // a transfer into a part
      r.T().slice(1, 2).assign(1.0);                      // a strided part
      check_error([&] { r.to_vector<int>(); }, {"divide", "integer division by zero"});
      check_error([&] { r.slice(0, 1).to_vector<int>(); }, {"divide"});
      try {
        nd::waitall();
      } catch (const Error&) {
      }
      // A write of the whole storage, through any view that covers it, clears the poison.
      r.T().assign(nd::full({3, 4}, 2, nd::int32, device));
      CHECK(r.to_vector<int>() == std::vector<int>(12, 2));
      r.slice(0, 1).assign(5.0);
      CHECK(r.to_vector<int>() == std::vector<int>{5, 5, 5, 2, 2, 2, 2, 2, 2, 2, 2, 2});
    }
  }

  TEST_CASE("an empty array reads as zeros, never as the values of a freed array") {
    std::vector<Device> devices{cpu()};
    for (int i = 0; i < std::min(2, device_count(DeviceKind::sim)); ++i) devices.push_back(sim(i));
    const std::int64_t n = 1 << 16;  // large enough for the host pool's cache of blocks
    for (Device device : devices) {
      INFO(to_string(device));
      for (int round = 0; round < 3; ++round) {
        {
          const NDArray old = nd::full({n}, 7.0, nd::float32, device);
          old.wait_to_read();
        }
        nd::waitall();  // the old block is back in its pool
        const std::vector<float> values = nd::empty({n}, nd::float32, device).to_vector<float>();
        CHECK(std::count(values.begin(), values.end(), 0.0f) == n);
      }
    }
  }

}  // TEST_SUITE

}  // namespace tandem::testing
