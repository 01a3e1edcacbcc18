// Aggregates and overlap figures on hand-made events, where the right answer is known.
#include <doctest/doctest.h>

#include <tandem/profiler.h>
#include <string>

namespace {

tandem::profiler::OpEvent op(std::uint64_t id, const char* name, tandem::Queue queue,
                             const char* lane, std::int64_t start_us, std::int64_t end_us,
                             tandem::Device device = tandem::cpu()) {
  tandem::profiler::OpEvent e;
  e.id = id;
  e.name = name;
  e.queue = queue;
  e.lane = lane;
  e.device = device;
  e.push_ns = e.ready_ns = e.start_ns = start_us * 1000;
  e.end_ns = end_us * 1000;
  return e;
}

using tandem::Queue;

}  // namespace

TEST_CASE("op_stats aggregates count, total, mean, min and max per op name") {
  const std::vector<tandem::profiler::OpEvent> events = {op(1, "a", Queue::compute, "w0", 0, 10),
                                                         op(2, "a", Queue::compute, "w0", 10, 40),
                                                         op(3, "b", Queue::compute, "w1", 0, 5)};
  const auto stats = tandem::profiler::op_stats(events);
  REQUIRE(stats.size() == 2);
  CHECK(stats[0].name == "a");  // sorted by total time
  CHECK(stats[0].count == 2);
  CHECK(stats[0].total_us == doctest::Approx(40));
  CHECK(stats[0].mean_us == doctest::Approx(20));
  CHECK(stats[0].min_us == doctest::Approx(10));
  CHECK(stats[0].max_us == doctest::Approx(30));
  CHECK(stats[1].count == 1);
}

TEST_CASE("a perfect copy/compute pipeline has overlap efficiency 1") {
  // h2d | compute | d2h, three lanes, each 30 us busy, chunks shifted by 10 us: wall 50 us.
  std::vector<tandem::profiler::OpEvent> events;
  std::uint64_t id = 0;
  for (int chunk = 0; chunk < 3; ++chunk) {
    const int t = chunk * 10;
    events.push_back(op(++id, "h2d", Queue::copy_h2d, "h2d", t, t + 10));
    events.push_back(op(++id, "kernel", Queue::compute, "compute", t + 10, t + 20));
    events.push_back(op(++id, "d2h", Queue::copy_d2h, "d2h", t + 20, t + 30));
  }
  const auto figures = tandem::profiler::overlap(events);
  REQUIRE(figures.size() == 1);
  const auto& o = figures[0];
  CHECK(o.wall_us == doctest::Approx(50));
  CHECK(o.compute_us == doctest::Approx(30));
  CHECK(o.h2d_us == doctest::Approx(30));
  CHECK(o.d2h_us == doctest::Approx(30));
  CHECK(o.compute_h2d_us == doctest::Approx(20));
  CHECK(o.compute_d2h_us == doctest::Approx(20));
  CHECK(o.h2d_d2h_us == doctest::Approx(10));
  CHECK(o.lane_busy_sum_us == doctest::Approx(90));
  CHECK(o.lane_busy_max_us == doctest::Approx(30));
  // (90 - 50) / (90 - 30) = 2/3: fill and drain cost a third of the ideal overlap.
  CHECK(o.overlap_efficiency == doctest::Approx(40.0 / 60.0));
}

TEST_CASE("lanes that run one after the other have overlap efficiency 0") {
  const std::vector<tandem::profiler::OpEvent> events = {
      op(1, "h2d", Queue::copy_h2d, "h2d", 0, 10), op(2, "k", Queue::compute, "compute", 10, 20),
      op(3, "d2h", Queue::copy_d2h, "d2h", 20, 30)};
  const auto o = tandem::profiler::overlap(events).at(0);
  CHECK(o.wall_us == doctest::Approx(30));
  CHECK(o.overlap_efficiency == doctest::Approx(0));
  CHECK(o.compute_h2d_us == doctest::Approx(0));
}

TEST_CASE("fully parallel lanes have overlap efficiency 1 and devices are kept apart") {
  const std::vector<tandem::profiler::OpEvent> events = {
      op(1, "x", Queue::compute, "w0", 0, 100), op(2, "y", Queue::compute, "w1", 0, 100),
      op(3, "z", Queue::compute, "s0", 0, 40, tandem::sim(0))};
  const auto figures = tandem::profiler::overlap(events);
  REQUIRE(figures.size() == 2);
  CHECK(figures[0].device == tandem::cpu());
  CHECK(figures[0].overlap_efficiency == doctest::Approx(1));
  CHECK(figures[0].compute_us == doctest::Approx(100));  // union, not sum
  CHECK(figures[1].device == tandem::sim(0));
  CHECK(figures[1].overlap_efficiency == doctest::Approx(0));  // a single lane
}

TEST_CASE("the summary and the timeline show every op name and lane") {
  const std::vector<tandem::profiler::OpEvent> events = {
      op(1, "load<x>", Queue::copy_h2d, "cpu priority 0", 0, 10),
      op(2, "scale", Queue::compute, "cpu worker 0", 5, 25)};
  const std::string text = tandem::profiler::summary(events);
  CHECK(text.find("load<x>") != std::string::npos);
  CHECK(text.find("scale") != std::string::npos);
  CHECK(text.find("cpu(0)") != std::string::npos);
  const std::string svg = tandem::profiler::timeline_svg(events);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("load&lt;x&gt;") != std::string::npos);  // escaped
  CHECK(svg.find("cpu worker 0") != std::string::npos);
  CHECK(svg.find("cpu priority 0") != std::string::npos);
}
