// Differential test: random NDArray programs give bit-identical arrays on the threaded engine
// (default workers and one worker) and the naive engine. Any race, lost dependency or
// thread-count-dependent kernel would show as a difference.
#include <cstring>

#include "frontend_test_util.h"

namespace tandem::testing {

namespace {

// The raw bytes of every array, the program's observable result.
using Snapshot = std::vector<std::vector<unsigned char>>;

std::vector<unsigned char> bytes_of(const NDArray& a) {
  std::vector<unsigned char> out(static_cast<std::size_t>(a.size()) * ops::dtype_size(a.dtype()));
  const auto copy = [&](const auto& values) {
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  };
  switch (a.dtype()) {
    case DType::float32:
      copy(a.to_vector<float>());
      break;
    case DType::float64:
      copy(a.to_vector<double>());
      break;
    case DType::int32:
      copy(a.to_vector<std::int32_t>());
      break;
    case DType::int64:
      copy(a.to_vector<std::int64_t>());
      break;
    case DType::uint8:
      copy(a.to_vector<std::uint8_t>());
      break;
  }
  return out;
}

// One random program: a pool of arrays that random ops read, replace and write into. Every
// choice comes from `rng`, so two runs with one seed make the same calls; a call that throws at
// the call (incompatible shapes or dtypes) is skipped identically on every engine.
Snapshot run_program(Engine& engine, std::uint64_t seed, int steps) {
  nd::EngineScope scope(engine);
  std::mt19937_64 rng(seed);
  nd::random::seed(seed);
  const std::int64_t r = scaled(256, 16), c = 160;  // r x c floats take the parallel paths
  std::vector<NDArray> pool{
      nd::random::uniform({r, c}),
      nd::random::normal({c}),
      nd::random::uniform({r, 1}),
      nd::random::normal({c, r}),
      nd::arange(static_cast<double>(r * c)).reshape({r, c}) / static_cast<double>(r * c),
      nd::random::uniform({r, c}, {.dtype = nd::float64}),
      nd::random::uniform({1, c}, {.dtype = nd::float64})};
  const auto pick = [&]() -> NDArray& { return pool[rng() % pool.size()]; };
  const auto put = [&](NDArray a) {
    if (pool.size() < 14) {
      pool.push_back(std::move(a));
    } else {
      pool[rng() % pool.size()] = std::move(a);
    }
  };
  for (int step = 0; step < steps; ++step) {
    try {
      switch (rng() % 12) {
        case 0: {
          NDArray& a = pick();
          NDArray& b = pick();
          switch (rng() % 5) {
            case 0:
              put(a + b);
              break;
            case 1:
              put(a - b);
              break;
            case 2:
              put(a * b);
              break;
            case 3:
              put(nd::maximum(a, b));
              break;
            default:
              put(a / (nd::abs(b) + 1));
              break;
          }
          break;
        }
        case 1:
          put(pick() * 0.5 + 0.25);
          break;
        case 2: {
          NDArray& a = pick();
          switch (rng() % 5) {
            case 0:
              put(nd::tanh(a));
              break;
            case 1:
              put(nd::sigmoid(a));
              break;
            case 2:
              put(nd::relu(a - 0.5));
              break;
            case 3:
              put(nd::sqrt(nd::abs(a)));
              break;
            default:
              put(nd::exp(-nd::square(a)));
              break;
          }
          break;
        }
        case 3: {
          NDArray& a = pick();
          NDArray& b = pick();
          if (rng() % 2) {
            a += b;
          } else {
            a *= nd::sigmoid(b);
          }
          break;
        }
        case 4: {
          NDArray& a = pick();
          NDArray& b = pick();
          if (a.ndim() == 2 && b.ndim() == 2 && a.shape()[1] != b.shape()[0]) {
            put(nd::dot(a, b.T()) / static_cast<double>(a.shape()[1]));
          } else {
            const std::int64_t inner = a.ndim() > 0 ? a.shape()[a.ndim() - 1] : 1;
            put(nd::dot(a, b) / static_cast<double>(inner));
          }
          break;
        }
        case 5: {
          NDArray& a = pick();
          const int axis = static_cast<int>(rng() % static_cast<unsigned>(std::max(1, a.ndim())));
          switch (rng() % 5) {
            case 0:
              put(nd::sum(a, axis) / static_cast<double>(a.shape()[axis]));
              break;
            case 1:
              put(nd::mean(a, axis, true));
              break;
            case 2:
              put(nd::max(a, axis));
              break;
            case 3:
              put(nd::norm(a).reshape({1}));
              break;
            default:
              put(nd::argmax(a, axis).astype(a.dtype()) / 100.0);
              break;
          }
          break;
        }
        case 6: {
          NDArray& a = pick();
          switch (rng() % 3) {
            case 0:
              put(a.T());
              break;
            case 1:
              put(a.slice(static_cast<std::int64_t>(rng() % 3), a.shape()[0],
                          1 + static_cast<std::int64_t>(rng() % 3)));
              break;
            default:
              put(a.reshape({-1}));
              break;
          }
          break;
        }
        case 7:
          put(rng() % 2 ? nd::random::uniform(pick().shape()) : nd::random::normal({c}));
          break;
        case 8: {
          NDArray& a = pick();
          put(nd::concat({a, pick()}, 0));
          break;
        }
        case 9: {
          NDArray& a = pick();
          if (a.ndim() >= 1 && a.shape()[0] > 2) a.slice(1, a.shape()[0], 2).assign(pick()[0]);
          break;
        }
        case 10:
          put(nd::sum(pick()) + nd::zeros({1}));
          break;
        default:
          put(pick().copy());
          break;
      }
    } catch (const Error& e) {
      // An incompatible combination: thrown at the call, skipped the same way everywhere.
      if (std::getenv("TANDEM_TEST_VERBOSE")) MESSAGE(std::string(e.what()));
    }
  }
  Snapshot snapshot;
  for (const NDArray& a : pool) snapshot.push_back(bytes_of(a));
  pool.clear();
  engine.wait_all();
  return snapshot;
}

// How a mixed program syncs between its steps.
enum class Syncs { none, random };

// One random program over the cpu and the sim devices: arrays hop between devices (chains such
// as sim(0) -> cpu -> sim(1) -> cpu, in both directions), are computed on where they land, and
// are copied into existing arrays on other devices, whole or into a slice. With Syncs::random a
// step may end with a wait on its result or a waitall. The naive engine runs each op to the end
// (device work included) before the next push: the reference for every ordering between the
// cpu's ops, the launch functions of accelerator ops and their stream work.
Snapshot run_mixed_program(Engine& engine, std::uint64_t seed, int steps, Syncs syncs) {
  nd::EngineScope scope(engine);
  std::mt19937_64 rng(seed);
  std::vector<Device> devices{cpu()};
  for (int i = 0; i < std::min(2, device_count(DeviceKind::sim)); ++i) devices.push_back(sim(i));
  const auto device = [&] { return devices[rng() % devices.size()]; };
  // Big enough that a copy is still queued on its stream when the next op launches.
  const std::int64_t n = scaled(1 << 16, 1 << 12);
  std::vector<NDArray> pool;
  for (int i = 0; i < 6; ++i) {
    const DType dtype = i % 2 ? nd::float64 : nd::float32;
    pool.push_back(
        nd::arange(0.0, static_cast<double>(n), 1.0, dtype, devices[i % devices.size()]) *
        (0.25 * (i + 1)));
  }
  std::size_t last = 0;  // the array the previous step produced: chains continue from it
  const auto pick = [&]() -> NDArray& { return pool[rng() % 2 ? last : rng() % pool.size()]; };
  const auto put = [&](NDArray a) {
    last = rng() % pool.size();
    pool[last] = std::move(a);
  };
  for (int step = 0; step < steps; ++step) {
    try {
      switch (rng() % 7) {
        case 0:
        case 1:
          put(pick().copyto(device()));
          break;
        case 2: {
          NDArray& a = pick();
          if (rng() % 2) {
            a += 1.0;
          } else {
            a *= 0.5;
          }
          break;
        }
        case 3: {
          NDArray& a = pick();
          const NDArray b = pick().as_in_context(a.device());
          put(a * 0.75 + b);
          break;
        }
        case 4: {
          NDArray& a = pick();
          NDArray& b = pick();
          if (a.device() != b.device()) nd::allreduce({a, b});
          break;
        }
        case 5:
          pick().copyto(pick());
          break;
        default: {
          NDArray& a = pick();
          NDArray& b = pick();
          const std::int64_t half = n / 2;
          a.slice(0, half).copyto(b.slice(half, n));
          break;
        }
      }
    } catch (const Error& e) {
      // An incompatible combination: thrown at the call, skipped the same way everywhere.
      if (std::getenv("TANDEM_TEST_VERBOSE")) MESSAGE(std::string(e.what()));
    }
    if (syncs == Syncs::random) {
      switch (rng() % 4) {
        case 0:
          pool[last].wait_to_read();
          break;
        case 1:
          engine.wait_all();
          break;
        default:
          break;
      }
    }
  }
  Snapshot snapshot;
  for (const NDArray& a : pool) snapshot.push_back(bytes_of(a));
  pool.clear();
  engine.wait_all();
  return snapshot;
}

}  // namespace

TEST_SUITE("frontend.differential") {
  TEST_CASE("random NDArray programs give bit-identical arrays on threaded and naive engines") {
    auto threaded = Engine::create(EngineConfig{});
    auto one_worker = Engine::create(EngineConfig{.cpu_workers = 1});
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    constexpr int kSteps = 150;
    const int programs = static_cast<int>(scaled(24, 4));
    for (int p = 0; p < programs; ++p) {
      const auto seed = static_cast<std::uint64_t>(1000 + p);
      INFO("program seed " << seed);
      const Snapshot expected = run_program(*naive, seed, kSteps);
      const Snapshot got = run_program(*threaded, seed, kSteps);
      REQUIRE(got.size() == expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK_MESSAGE(got[i] == expected[i], "array " << i << " differs (threaded vs naive)");
      }
      if (p % 4 == 0) CHECK(run_program(*one_worker, seed, kSteps) == expected);
    }
  }

  TEST_CASE("random mixed cpu and sim chains give bit-identical arrays on threaded and naive") {
    if (device_count(DeviceKind::sim) == 0) {
      MESSAGE("SKIPPED: no sim device");
      return;
    }
    auto threaded = Engine::create(EngineConfig{});
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    constexpr int kSteps = 60;
    const int programs = static_cast<int>(scaled(12, 3));
    for (int p = 0; p < programs; ++p) {
      for (Syncs syncs : {Syncs::none, Syncs::random}) {
        const auto seed = static_cast<std::uint64_t>(5000 + p);
        const std::string how = syncs == Syncs::none ? "no syncs" : "random syncs";
        INFO("program seed " << seed << ", " << how);
        const Snapshot expected = run_mixed_program(*naive, seed, kSteps, syncs);
        const Snapshot got = run_mixed_program(*threaded, seed, kSteps, syncs);
        REQUIRE(got.size() == expected.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
          CHECK_MESSAGE(got[i] == expected[i], "array " << i << " differs (threaded vs naive)");
        }
      }
    }
  }
}  // TEST_SUITE

}  // namespace tandem::testing
