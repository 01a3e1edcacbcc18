// Differential test of failures: random integer programs over cpu, sim(0) and sim(1) in which
// divisions by a zero element fail on whatever device they run (on sim, in the device work,
// after the op was launched), chains continue from poisoned arrays across devices, and partial
// writes land in poisoned arrays. The threaded engine must report exactly what the naive one
// does: each array's value or error, what every wait in the program threw, and the errors
// wait_all throws, in the same order.
#include <cstdint>
#include <string>
#include <vector>

#include "frontend_test_util.h"

namespace tandem::testing {

namespace {

struct Outcome {
  std::vector<std::string> arrays;    // each array's values, or the error reading it threw
  std::vector<std::string> waits;     // what each wait of the program threw ("" if nothing)
  std::vector<std::string> wait_all;  // the errors of the final wait_all calls, in order
  bool operator==(const Outcome&) const = default;
};

std::string describe(const NDArray& array) {
  try {
    std::string text;
    for (std::int32_t v : array.to_vector<std::int32_t>()) text += std::to_string(v) + ",";
    return text;
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

template <class Fn>
std::string exception_message_of(Fn&& fn) {
  try {
    fn();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

Outcome run_failing_program(Engine& engine, std::uint64_t seed, int steps, bool with_waits) {
  nd::EngineScope scope(engine);
  std::mt19937_64 rng(seed);
  std::vector<Device> devices{cpu()};
  for (int i = 0; i < std::min(2, device_count(DeviceKind::sim)); ++i) devices.push_back(sim(i));
  const auto device = [&] { return devices[rng() % devices.size()]; };
  const std::int64_t n = 64;
  const auto fresh = [&](Device where) {
    // arange - k holds one zero (at k) when 0 <= k < n: a divisor that fails.
    const auto k = static_cast<double>(static_cast<std::int64_t>(rng() % (2 * n)) - n / 2);
    return nd::arange(-k, static_cast<double>(n) - k, 1.0, nd::int32, where);
  };
  std::vector<NDArray> pool;
  for (int i = 0; i < 6; ++i)
    pool.push_back(fresh(devices[static_cast<std::size_t>(i) % devices.size()]));
  const auto pick = [&]() -> NDArray& { return pool[rng() % pool.size()]; };
  const auto put = [&](NDArray a) { pool[rng() % pool.size()] = std::move(a); };
  Outcome outcome;
  for (int step = 0; step < steps; ++step) {
    try {
      switch (rng() % 8) {
        case 0:
        case 1: {
          NDArray& a = pick();
          const NDArray b = pick().as_in_context(a.device());
          put(a / b);  // fails when b holds a zero
          break;
        }
        case 2:
          put(pick().copyto(device()));
          break;
        case 3: {
          NDArray& a = pick();
          a += pick().as_in_context(a.device());
          break;
        }
        case 4: {
          NDArray& a = pick();
          put(a * 3 + 1);
          break;
        }
        case 5: {
          // A partial write: the rest of a poisoned array stays poisoned.
          NDArray& a = pick();
          a.slice(0, n / 2).assign(pick().slice(n / 2, n).as_in_context(a.device()));
          break;
        }
        case 6:
          put(fresh(device()));  // a clean array again
          break;
        default:
          pick().copyto(pick());  // a whole write: clears the destination's poison if it works
          break;
      }
    } catch (const Error& e) {
      // Thrown at the call (incompatible arguments): the same on every engine.
      if (std::getenv("TANDEM_TEST_VERBOSE")) MESSAGE(std::string(e.what()));
    }
    if (with_waits && rng() % 5 == 0) {
      NDArray& a = pick();
      outcome.waits.push_back(exception_message_of([&] { a.wait_to_read(); }));
    }
  }
  for (int i = 0; i < 1000; ++i) {
    const std::string error = exception_message_of([&] { engine.wait_all(); });
    if (error.empty()) break;
    outcome.wait_all.push_back(error);
  }
  for (const NDArray& a : pool) outcome.arrays.push_back(describe(a));
  pool.clear();
  for (int i = 0; i < 1000 && !exception_message_of([&] { engine.wait_all(); }).empty(); ++i) {
  }
  return outcome;
}

}  // namespace

TEST_SUITE("frontend.differential_errors") {
  TEST_CASE(
      "failures on cpu and sim devices: same values, errors and wait_all order on both "
      "engines") {
    if (device_count(DeviceKind::sim) == 0) {
      MESSAGE("SKIPPED: no sim device");
      return;
    }
    auto threaded = Engine::create(EngineConfig{});
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    constexpr int kSteps = 80;
    const int programs = static_cast<int>(scaled(16, 4));
    int failures_seen = 0;
    for (int p = 0; p < programs; ++p) {
      for (bool with_waits : {false, true}) {
        const auto seed = static_cast<std::uint64_t>(9000 + p);
        INFO("program seed " << seed << (with_waits ? ", with waits" : ", no waits"));
        const Outcome expected = run_failing_program(*naive, seed, kSteps, with_waits);
        const Outcome got = run_failing_program(*threaded, seed, kSteps, with_waits);
        failures_seen += static_cast<int>(expected.wait_all.size());
        REQUIRE(got.arrays.size() == expected.arrays.size());
        for (std::size_t i = 0; i < got.arrays.size(); ++i) {
          CAPTURE(i);
          CHECK(got.arrays[i] == expected.arrays[i]);
        }
        CHECK(got.waits == expected.waits);
        REQUIRE(got.wait_all.size() == expected.wait_all.size());
        for (std::size_t i = 0; i < got.wait_all.size(); ++i) {
          CAPTURE(i);
          CHECK(got.wait_all[i] == expected.wait_all[i]);
        }
      }
    }
    // The programs must really fail, or this test would prove nothing.
    CHECK(failures_seen > programs);
  }
}  // TEST_SUITE

}  // namespace tandem::testing
