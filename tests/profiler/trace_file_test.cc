// The trace file: every pushed op exactly once, with consistent times, lanes and flow arrows.
#include <doctest/doctest.h>

#include <tandem/engine.h>
#include <tandem/profiler.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tandem_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

void busy_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

TEST_CASE("the trace holds every pushed op exactly once with push <= ready <= start <= end") {
  for (auto kind : {tandem::EngineKind::threaded, tandem::EngineKind::naive}) {
    CAPTURE(tandem::engine_kind_name(kind));
    auto engine = tandem::Engine::create({.kind = kind});
    std::vector<tandem::Var> vars(16);
    for (auto& v : vars) v = engine->new_var();
    tandem::profiler::start();
    constexpr int kOps = 500;
    for (int i = 0; i < kOps; ++i) {
      const tandem::Var w = vars[static_cast<std::size_t>(i) % vars.size()];
      const tandem::Var r = vars[static_cast<std::size_t>(i * 7 + 3) % vars.size()];
      engine->push([] {}, tandem::cpu(), {r}, {w},
                   {.name = i % 2 ? "odd" : "even",
                    .queue = i % 5 == 0 ? tandem::Queue::copy_h2d : tandem::Queue::compute});
    }
    engine->wait_all();
    tandem::profiler::stop();
    for (tandem::Var v : vars) engine->delete_var(v);  // after stop(): not in the trace
    const std::string path = temp_path("trace.json");
    tandem::profiler::dump(path);

    const nlohmann::json trace = read_json(path);
    REQUIRE(trace.contains("traceEvents"));
    REQUIRE(trace["traceEvents"].is_array());
    std::map<std::uint64_t, int> seen;
    std::set<std::pair<int, int>> named_lanes, used_lanes;
    int flows_out = 0, flows_in = 0;
    for (const auto& e : trace["traceEvents"]) {
      const std::string ph = e.at("ph");
      if (ph == "M") {
        if (e.at("name") == "thread_name")
          named_lanes.insert({e.at("pid").get<int>(), e.at("tid").get<int>()});
        continue;
      }
      if (ph == "s") ++flows_out;
      if (ph == "f") ++flows_in;
      if (ph != "X") continue;
      const auto& a = e.at("args");
      ++seen[a.at("id").get<std::uint64_t>()];
      used_lanes.insert({e.at("pid").get<int>(), e.at("tid").get<int>()});
      CHECK(e.at("dur").get<double>() >= 0);
      CHECK(a.at("push_ns").get<std::int64_t>() <= a.at("ready_ns").get<std::int64_t>());
      CHECK(a.at("ready_ns").get<std::int64_t>() <= a.at("start_ns").get<std::int64_t>());
      CHECK(a.at("start_ns").get<std::int64_t>() <= a.at("end_ns").get<std::int64_t>());
      CHECK(a.at("device") == "cpu(0)");
      const std::string name = e.at("name");
      CHECK((name == "odd" || name == "even"));
    }
    CHECK(seen.size() == kOps);
    for (const auto& [id, count] : seen) CHECK(count == 1);
    CHECK(seen.begin()->first >= 1);
    // Every lane an op ran on is named, and every flow arrow has both ends.
    for (const auto& lane : used_lanes) CHECK(named_lanes.count(lane) == 1);
    CHECK(flows_out == flows_in);
    CHECK(flows_out > 0);
    std::filesystem::remove(path);
  }
}

TEST_CASE("load reads back what dump wrote") {
  auto engine = tandem::Engine::create({});
  tandem::Var a = engine->new_var(), b = engine->new_var();
  tandem::profiler::start();
  engine->push([] { busy_for(std::chrono::microseconds(200)); }, tandem::cpu(), {}, {a},
               {.name = "produce"});
  engine->push([] { busy_for(std::chrono::microseconds(200)); }, tandem::cpu(), {a}, {b},
               {.name = "consume"});
  engine->wait_all();
  tandem::profiler::stop();
  const auto recorded = tandem::profiler::events();
  REQUIRE(recorded.size() == 2);
  const std::string path = temp_path("roundtrip.json");
  tandem::profiler::dump(path);
  const auto loaded = tandem::profiler::load(path);
  REQUIRE(loaded.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(loaded[i].id == recorded[i].id);
    CHECK(loaded[i].name == recorded[i].name);
    CHECK(loaded[i].lane == recorded[i].lane);
    CHECK(loaded[i].start_ns == recorded[i].start_ns);
    CHECK(loaded[i].end_ns == recorded[i].end_ns);
    CHECK(loaded[i].device == recorded[i].device);
  }
  // consume waited for produce: its dependency edge names produce, and it started after it.
  CHECK(loaded[1].depends_on == std::vector<std::uint64_t>{loaded[0].id});
  CHECK(loaded[1].start_ns >= loaded[0].end_ns);
  CHECK(loaded[0].end_ns - loaded[0].start_ns >= 200'000);
  std::filesystem::remove(path);
  engine->delete_var(a);
  engine->delete_var(b);
}

TEST_CASE("ops are not recorded while the profiler is off") {
  auto engine = tandem::Engine::create({});
  tandem::Var a = engine->new_var();
  tandem::profiler::start();
  tandem::profiler::stop();
  for (int i = 0; i < 100; ++i) engine->push([] {}, tandem::cpu(), {}, {a});
  engine->wait_all();
  CHECK(tandem::profiler::events().empty());
  CHECK_FALSE(tandem::profiler::enabled());
  engine->delete_var(a);
}

TEST_CASE("failed and skipped ops are marked in the trace") {
  auto engine = tandem::Engine::create({});
  tandem::Var a = engine->new_var(), b = engine->new_var();
  tandem::profiler::start();
  engine->push([] { throw std::runtime_error("boom"); }, tandem::cpu(), {}, {a}, {.name = "fails"});
  engine->push([] {}, tandem::cpu(), {a}, {b}, {.name = "skipped"});
  CHECK_THROWS_AS(engine->wait_all(), tandem::OpError);
  tandem::profiler::stop();
  const auto events = tandem::profiler::events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].failed);
  CHECK_FALSE(events[0].skipped);
  CHECK(events[1].skipped);
  CHECK_FALSE(events[1].failed);
  engine->delete_var(a);
  engine->delete_var(b);
}

TEST_CASE("TANDEM_PROFILE writes the process-wide engine's trace when it is replaced") {
  const std::string path = temp_path("env_profile.json");
  tandem::EngineConfig config;
  config.profile_path = path;  // what TANDEM_PROFILE sets
  tandem::Engine::set_default(config);
  auto& engine = tandem::Engine::get();
  tandem::Var v = engine.new_var();
  for (int i = 0; i < 10; ++i) engine.push([] {}, tandem::cpu(), {}, {v}, {.name = "step"});
  engine.delete_var(v);
  tandem::Engine::set_default(tandem::EngineConfig{});  // destroys the profiled engine
  const auto events = tandem::profiler::load(path);
  CHECK(events.size() == 11);  // ten steps and the delete
  std::filesystem::remove(path);
}

TEST_CASE("dump and load report unusable files clearly") {
  CHECK_THROWS_WITH_AS(tandem::profiler::dump("/nonexistent-dir/trace.json"),
                       doctest::Contains("/nonexistent-dir/trace.json"), tandem::Error);
  CHECK_THROWS_WITH_AS(tandem::profiler::load("/nonexistent-dir/trace.json"),
                       doctest::Contains("cannot open"), tandem::Error);
  const std::string path = temp_path("broken.json");
  std::ofstream(path) << "{ not json";
  CHECK_THROWS_WITH_AS(tandem::profiler::load(path), doctest::Contains("not valid JSON"),
                       tandem::Error);
  std::filesystem::remove(path);
}
