// Where a ready accelerator op runs (StreamChooser): a dependency chain stays on the stream of
// its producer, so it pays no cross-stream event waits; independent compute ops still spread
// over the compute streams; copy queues keep their own stream. On sim and on the null backend.
#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "null_backend.h"
#include "sim_test_support.h"

using namespace tandem;
using namespace tandem_test;

namespace {

// The devices the tests run on: sim (modelled durations, so work is still running when the next
// op launches) and null (work ends at once).
std::vector<Device> devices_under_test() {
  use_sim_test_config();
  return {sim(0), null_device(0)};
}

// Pushes a compute op on `device` that notes the compute stream it ran on.
void push_noting_stream(Engine& engine, Device device, VarList reads, VarList writes,
                        std::mutex& mutex, std::vector<int>& streams, double ms = 0.2) {
  engine.push(
      [&mutex, &streams, ms](RunContext& ctx) {
        {
          std::lock_guard lock(mutex);
          streams.push_back(ctx.stream()->index());
        }
        ctx.stream()->enqueue_host([] {}, cost_ms(ms));
      },
      device, reads, writes, {.name = "noted"});
}

}  // namespace

TEST_CASE("a chain of dependent ops stays on one stream and pays no cross-stream waits") {
  for (Device device : devices_under_test()) {
    CAPTURE(to_string(device));
    SimTestEngine engine(sim_engine_config(EngineKind::threaded));
    Var a = engine.var(), b = engine.var();
    std::mutex mutex;
    std::vector<int> streams;
    // a -> b -> a -> b ...: each op reads what the previous one wrote.
    for (int i = 0; i < 30; ++i) {
      push_noting_stream(*engine, device, {i % 2 == 0 ? a : b}, {i % 2 == 0 ? b : a}, mutex,
                         streams);
    }
    engine->wait_all();
    REQUIRE(streams.size() == 30);
    CHECK(std::set<int>(streams.begin(), streams.end()).size() == 1);
    CHECK(engine->stats().cross_stream_waits == 0);
  }
}

TEST_CASE("independent compute ops still spread over every compute stream") {
  for (Device device : devices_under_test()) {
    CAPTURE(to_string(device));
    SimTestEngine engine(sim_engine_config(EngineKind::threaded));
    std::mutex mutex;
    std::vector<int> streams;
    for (int i = 0; i < 8; ++i)
      push_noting_stream(*engine, device, {}, {engine.var()}, mutex, streams);
    engine->wait_all();
    REQUIRE(streams.size() == 8);
    const int n = accelerator(device).compute_streams();
    REQUIRE(n >= 2);
    CHECK(static_cast<int>(std::set<int>(streams.begin(), streams.end()).size()) == n);
    CHECK(engine->stats().cross_stream_waits == 0);
  }
}

TEST_CASE("a join of two streams' results counts one cross-stream wait") {
  for (Device device : devices_under_test()) {
    CAPTURE(to_string(device));
    SimTestEngine engine(sim_engine_config(EngineKind::threaded));
    Var a = engine.var(), b = engine.var(), c = engine.var();
    std::mutex mutex;
    std::vector<int> streams;
    push_noting_stream(*engine, device, {}, {a}, mutex, streams, 5);
    push_noting_stream(*engine, device, {}, {b}, mutex, streams, 5);
    push_noting_stream(*engine, device, {a, b}, {c}, mutex, streams);
    engine->wait_all();
    REQUIRE(streams.size() == 3);
    CHECK(streams[0] != streams[1]);  // independent: round-robin
    // Follows one input's producer and waits for the other one.
    CHECK((streams[2] == streams[0] || streams[2] == streams[1]));
    CHECK(engine->stats().cross_stream_waits == 1);
  }
}

TEST_CASE("copy queues keep their own stream whatever produced their input") {
  for (Device device : devices_under_test()) {
    CAPTURE(to_string(device));
    SimTestEngine engine(sim_engine_config(EngineKind::threaded));
    Var a = engine.var(), b = engine.var();
    std::string lane;
    push_sim(*engine, device, {}, {a}, "produce", 1, [] {});
    engine->push([&lane](RunContext& ctx) { lane = ctx.stream()->name(); }, device, {a}, {b},
                 {.name = "copy out", .queue = Queue::copy_d2h});
    engine->wait_all();
    CHECK(lane == to_string(device) + " d2h");
  }
}

TEST_CASE("the naive engine launches synchronously and never waits across streams") {
  for (Device device : devices_under_test()) {
    CAPTURE(to_string(device));
    SimTestEngine engine(sim_engine_config(EngineKind::naive));
    Var a = engine.var();
    std::mutex mutex;
    std::vector<int> streams;
    for (int i = 0; i < 6; ++i) push_noting_stream(*engine, device, {a}, {a}, mutex, streams);
    engine->wait_all();
    CHECK(streams.size() == 6);
    CHECK(engine->stats().cross_stream_waits == 0);
  }
}
