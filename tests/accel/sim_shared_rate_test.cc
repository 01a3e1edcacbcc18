// The processor-sharing schedule of a sim device's compute streams (SimSharedRate), on made-up
// times: no threads, no clock, so the expected ends are exact.
#include <doctest/doctest.h>

#include <chrono>

#include "accel/sim/sim_shared_rate.h"

using tandem::detail::SimSharedRate;
using namespace std::chrono_literals;

namespace {

// Times relative to one origin, in milliseconds, so that the cases read like a timeline.
struct Timeline {
  SimSharedRate rate;
  SimSharedRate::Clock::time_point origin = SimSharedRate::Clock::now();

  SimSharedRate::Clock::time_point at(double ms) const {
    return origin + std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
  }
  double ms(SimSharedRate::Clock::time_point t) const {
    return static_cast<double>((t - origin).count()) / 1e6;
  }
  SimSharedRate::Ticket start(double at_ms, double work_ms) {
    return rate.start(at(at_ms),
                      std::chrono::nanoseconds(static_cast<std::int64_t>(work_ms * 1e6)));
  }
  // When the kernel ends, asked at `now_ms` (no starts after it).
  double ends(SimSharedRate::Ticket ticket, double now_ms) {
    return ms(rate.finish_time(ticket, at(now_ms)));
  }
};

}  // namespace

TEST_CASE("a kernel alone on the device ends after its work") {
  Timeline t;
  const auto kernel = t.start(1, 10);
  CHECK(t.ends(kernel, 1) == doctest::Approx(11));
  CHECK(t.rate.running(t.at(5)) == 1);
  CHECK(t.ends(kernel, 12) == doctest::Approx(11));  // asked after the end: the exact end
  CHECK(t.rate.running(t.at(12)) == 0);
}

TEST_CASE("two equal kernels started together both end after twice the work") {
  Timeline t;
  const auto first = t.start(0, 10);
  const auto second = t.start(0, 10);
  CHECK(t.rate.running(t.at(1)) == 2);
  CHECK(t.ends(first, 1) == doctest::Approx(20));
  CHECK(t.ends(second, 1) == doctest::Approx(20));
}

TEST_CASE("a kernel that starts later slows the running one only while both run") {
  Timeline t;
  const auto longer = t.start(0, 10);
  CHECK(t.ends(longer, 0) == doctest::Approx(10));  // alone so far
  // At 4 ms the first kernel has 6 ms of work left; a 2 ms kernel shares the device with it
  // until 8 ms (each gets half), then the first has 4 ms left alone: it ends at 12 ms.
  const auto shorter = t.start(4, 2);
  CHECK(t.ends(shorter, 4) == doctest::Approx(8));
  CHECK(t.ends(longer, 4) == doctest::Approx(12));
  CHECK(t.ends(shorter, 9) == doctest::Approx(8));  // seen late: still its exact end
  CHECK(t.ends(longer, 9) == doctest::Approx(12));
}

TEST_CASE("three kernels share the device three ways, then two, then one") {
  Timeline t;
  const auto a = t.start(0, 3);
  const auto b = t.start(0, 6);
  const auto c = t.start(0, 9);
  // 3 running until a is done (3 ms of work each: 9 ms), 2 until b (3 more each: 15 ms), then c
  // alone (3 more: 18 ms). The device is never idle: the last ends at the sum of the work.
  CHECK(t.ends(a, 0) == doctest::Approx(9));
  CHECK(t.ends(b, 0) == doctest::Approx(15));
  CHECK(t.ends(c, 0) == doctest::Approx(18));
  CHECK(t.ends(c, 20) == doctest::Approx(18));
  CHECK(t.ends(b, 20) == doctest::Approx(15));
  CHECK(t.ends(a, 20) == doctest::Approx(9));
}

TEST_CASE("work of zero ends at once and an idle gap costs nothing") {
  Timeline t;
  const auto nothing = t.start(2, 0);
  CHECK(t.ends(nothing, 2) == doctest::Approx(2));
  const auto first = t.start(3, 1);
  CHECK(t.ends(first, 10) == doctest::Approx(4));
  const auto after_gap = t.start(10, 5);
  CHECK(t.ends(after_gap, 10) == doctest::Approx(15));
}
