// NDArray basics: creation, handles, views, devices, printing and sync functions.
#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "frontend_test_util.h"

namespace tandem::testing {

TEST_SUITE("frontend.ndarray") {
  TEST_CASE("creation functions give the shape, dtype, device and values asked for") {
    auto z = nd::zeros({2, 3});
    CHECK(z.shape() == Shape{2, 3});
    CHECK(z.dtype() == nd::float32);
    CHECK(z.device() == cpu());
    CHECK(z.to_vector<float>() == std::vector<float>(6, 0.0f));
    CHECK(nd::ones({4}, nd::int64).to_vector<std::int64_t>() == std::vector<std::int64_t>(4, 1));
    CHECK(nd::full({2, 2}, 7.5, nd::float64).to_vector<double>() == std::vector<double>(4, 7.5));
    CHECK(nd::arange(5).to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4});
    CHECK(nd::arange(1, 2, 0.25, nd::float64).to_vector<double>() ==
          std::vector<double>{1, 1.25, 1.5, 1.75});
    CHECK(nd::arange(5, 0, -2, nd::int32).to_vector<int>() == std::vector<int>{5, 3, 1});
    CHECK(nd::arange(3, 3).size() == 0);
    auto e = nd::empty({3, 0});
    CHECK(e.size() == 0);
    CHECK(e.to_vector<float>().empty());
    auto a = nd::array({{1, 2, 3}, {4, 5, 6}});
    CHECK(a.shape() == Shape{2, 3});
    CHECK(a.to_vector<int>() == std::vector<int>{1, 2, 3, 4, 5, 6});
    auto v = nd::from_vector(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}, {3, 2});
    CHECK(v.dtype() == nd::int32);
    CHECK(v.shape() == Shape{3, 2});
    CHECK(nd::zeros_like(v).to_vector<int>() == std::vector<int>(6, 0));
    CHECK(nd::ones_like(v).dtype() == nd::int32);
  }

  TEST_CASE("copying an NDArray copies the handle, not the data") {
    auto x = nd::zeros({3});
    nd::NDArray y = x;
    y += 1.0;
    CHECK(x.to_vector<float>() == std::vector<float>{1, 1, 1});
    CHECK(x.shares_storage_with(y));
    CHECK(x.var() == y.var());
    auto c = x.copy();
    c += 1.0;
    CHECK(x.to_vector<float>() == std::vector<float>{1, 1, 1});
    CHECK(c.to_vector<float>() == std::vector<float>{2, 2, 2});
    CHECK_FALSE(c.shares_storage_with(x));
  }

  TEST_CASE("reshape, slice, operator[] and T are views that share storage and var") {
    auto x = nd::arange(12).reshape({3, 4});
    CHECK(x.shape() == Shape{3, 4});
    auto r = x.reshape({2, -1});
    CHECK(r.shape() == Shape{2, 6});
    CHECK(r.shares_storage_with(x));
    auto rows = x.slice(1, 3);
    CHECK(rows.shape() == Shape{2, 4});
    CHECK(rows.is_contiguous());
    CHECK(rows.to_vector<int>() == std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11});
    auto stepped = x.slice(0, 3, 2);
    CHECK_FALSE(stepped.is_contiguous());
    CHECK(stepped.to_vector<int>() == std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11});
    CHECK(x.slice(-2, 100).shape() == Shape{2, 4});
    CHECK(x.slice(2, 1).shape() == Shape{0, 4});
    CHECK(x[1].to_vector<int>() == std::vector<int>{4, 5, 6, 7});
    CHECK(x[-1].shape() == Shape{4});
    CHECK(x[2][3].shape() == Shape{});
    CHECK(x[2][3].scalar<int>() == 11);
    auto t = x.T();
    CHECK(t.shape() == Shape{4, 3});
    CHECK(t.to_vector<int>() == std::vector<int>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
    CHECK(t.var() == x.var());
    // Writing through a view writes the original.
    x.slice(1, 2).assign(nd::full({1, 4}, -1));
    x[0] += 100.0;
    CHECK(x.to_vector<int>() == std::vector<int>{100, 101, 102, 103, -1, -1, -1, -1, 8, 9, 10, 11});
    // Reshaping a non-contiguous view copies.
    auto flat = t.reshape({12});
    CHECK_FALSE(flat.shares_storage_with(x));
    CHECK(flat.to_vector<int>() ==
          std::vector<int>{100, -1, 8, 101, -1, 9, 102, -1, 10, 103, -1, 11});
    CHECK(nd::transpose(x, {1, 0}).to_vector<int>() == flat.to_vector<int>());
  }

  TEST_CASE(
      "copyto always makes a new array; as_in_context returns the same one when already there") {
    auto x = nd::array({1, 2, 3});
    auto y = x.copyto(cpu());
    CHECK_FALSE(y.shares_storage_with(x));
    CHECK(y.to_vector<float>() == x.to_vector<float>());
    auto z = x.as_in_context(cpu());
    CHECK(z.shares_storage_with(x));
    auto d = nd::zeros({3});
    x.copyto(d);
    CHECK(d.to_vector<float>() == std::vector<float>{1, 2, 3});
    CHECK(x.astype(nd::int64).dtype() == nd::int64);
    CHECK(nd::array({1.7, -1.7, 1e20}).astype(nd::int32).to_vector<int>() ==
          std::vector<int>{1, -1, 2147483647});
  }

  TEST_CASE("device helpers: one CPU, the accelerators the registry reports") {
    CHECK(device_count(DeviceKind::cpu) == 1);
    CHECK(device_count(DeviceKind::cuda) >= 0);
    CHECK(device_count(DeviceKind::sim) == EngineConfig::from_env().accel.sim_devices);
    CHECK(device_available(cpu()));
    CHECK(device_available(cuda(0)) == (device_count(DeviceKind::cuda) > 0));
    CHECK_FALSE(device_available(sim(device_count(DeviceKind::sim))));
    CHECK(device_name(cpu()).rfind("cpu(0): ", 0) == 0);
    CHECK(to_string(cuda(1)) == "gpu(1)");
    CHECK(to_string(sim(0)) == "sim(0)");
    CHECK(nd::ones({2}).context() == cpu());
  }

  TEST_CASE("operator<< prints values and the MXNet tag") {
    std::ostringstream out;
    out << nd::array({{1, 2, 3}, {4, 5, 6}});
    CHECK(out.str() == "[[1. 2. 3.]\n [4. 5. 6.]]\n<NDArray 2x3 @cpu(0)>");
    std::ostringstream ints;
    ints << nd::arange(3, 0, -1, nd::int32);
    CHECK(ints.str() == "[3 2 1]\n<NDArray 3 @cpu(0)>");
    std::ostringstream mixed;
    mixed << nd::array({0.5, -1.25, 3});
    CHECK(mixed.str() == "[  0.5 -1.25    3.]\n<NDArray 3 @cpu(0)>");
    std::ostringstream big;
    big << nd::arange(2000);
    CHECK(big.str() == "[   0.    1.    2. ... 1997. 1998. 1999.]\n<NDArray 2000 @cpu(0)>");
    std::ostringstream sci;
    sci << nd::array({1.9998138e9});
    CHECK(sci.str() == "[1.9998138e+09]\n<NDArray 1 @cpu(0)>");
    std::ostringstream null;
    null << nd::NDArray();
    CHECK(null.str() == "<NDArray null>");
  }

  TEST_CASE("sync functions wait for the producing ops") {
    auto x = nd::random::uniform({256, 256});
    auto y = nd::dot(x, x);
    y.wait_to_read();
    auto s = y.sum();
    CHECK(s.scalar<double>() > 0);
    y.wait_to_write();
    CHECK(x.to_vector<float>().size() == 256u * 256u);
    nd::waitall();
    CHECK(nd::full({1}, 4).scalar<int>() == 4);
  }

  TEST_CASE("the memory of a dead array is freed only after the ops that use it") {
    // Drop every handle while a slow op still reads the array: the engine must keep it alive.
    auto engine = Engine::create(EngineConfig{});
    nd::EngineScope scope(*engine);
    std::atomic<bool> release{false};
    auto x = nd::full({1 << 16}, 3.0);
    engine->push(
        [&release] {
          while (!release.load()) std::this_thread::yield();
        },
        cpu(), {x.var()}, {});
    auto y = x * 2;
    const Var xv = x.var();
    x = nd::NDArray();
    release = true;
    CHECK(y.sum().scalar<double>() == 6.0 * (1 << 16));
    (void)xv;
    engine->wait_all();
  }

  TEST_CASE("a loop that never syncs does not keep every intermediate alive") {
    // 200 x (y = x + 1) on 4 MB arrays, never waiting: memory is allocated when an op runs and
    // given back as soon as the next iteration's op is done with it, so the peak stays at a few
    // arrays, not 200 of them (800 MB).
    const auto peak_mb = [] {
      std::ifstream status("/proc/self/status");
      std::string line;
      while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
      }
      return 0.0;
    };
    const std::int64_t n = scaled(1000, 100);
    const auto x = nd::ones({n, n});
    nd::waitall();
    const double before = peak_mb();
    nd::NDArray y;
    for (int i = 0; i < 200; ++i) y = x + 1;
    nd::waitall();
    CHECK(y.sum().scalar<double>() == 2.0 * static_cast<double>(n * n));
    const double array_mb = static_cast<double>(n * n * 4) / (1024.0 * 1024.0);
    CHECK(peak_mb() - before < 40 * array_mb + 16);
  }

  TEST_CASE("several front-end threads may use the front end at once") {
    std::vector<std::thread> threads;
    std::vector<double> sums(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([t, &sums] {
        auto acc = nd::zeros({64, 64}, nd::float64);
        for (int i = 0; i < 50; ++i) acc += nd::full({64}, t + 1, nd::float64);
        auto r = nd::random::uniform({8});  // the shared default generator
        sums[static_cast<std::size_t>(t)] =
            nd::sum(acc).scalar<double>() + 0 * r.sum().scalar<double>();
      });
    }
    for (auto& thread : threads) thread.join();
    for (int t = 0; t < 4; ++t)
      CHECK(sums[static_cast<std::size_t>(t)] == 50.0 * (t + 1) * 64 * 64);
  }

}  // TEST_SUITE

}  // namespace tandem::testing
