// The null test backend (null_backend.h): a third accelerator kind registered from the tests
// alone through the public registry, and the engine's accelerator paths running on it (fences
// across backends, device errors, waits, the launcher's binding); plus the registry's errors
// for unknown kinds and bad rows.
#include <tandem/accel/backend.h>
#include <tandem/profiler.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "null_backend.h"
#include "sim_test_support.h"

using namespace tandem;
using namespace tandem_test;

namespace {

const EngineKind kKinds[] = {EngineKind::threaded, EngineKind::naive};

// A null op whose device work runs `fn`.
template <class Fn>
void push_null(Engine& engine, Device device, VarList reads, VarList writes, const char* name,
               Fn fn, Queue queue = Queue::compute) {
  engine.push(
      [fn](RunContext& ctx) {
        REQUIRE(ctx.stream() != nullptr);
        ctx.stream()->enqueue_host(fn, {});
      },
      device, reads, writes, {.name = name, .queue = queue});
}

}  // namespace

TEST_CASE("the null backend registers from the tests alone as a third accelerator kind") {
  use_sim_test_config();
  const DeviceKind kind = register_null_backend();
  CHECK(kind == register_null_backend());  // idempotent
  CHECK(kind != DeviceKind::cpu);
  CHECK(kind != DeviceKind::cuda);
  CHECK(kind != DeviceKind::sim);
  CHECK(std::string(kind_name(kind)) == "null");
  CHECK(to_string(null_device(1)) == "null(1)");
  CHECK(parse_device("null(1)") == null_device(1));
  CHECK(parse_device("null") == null_device(0));
  CHECK(accelerator_count(kind) == 2);
  REQUIRE(find_backend("null") != nullptr);
  CHECK(find_backend("null")->kind == kind);
  const auto kinds = accelerator_kinds();
  CHECK(std::find(kinds.begin(), kinds.end(), kind) != kinds.end());
  Accelerator& device = accelerator(null_device(0));
  CHECK(device.device() == null_device(0));
  CHECK(device.compute_streams() == sim_test_config().compute_streams);
  CHECK(std::string(device.stream(Queue::compute, 1).name()) == "null(0) compute 1");
  CHECK(std::string(device.stream(Queue::copy_d2h).name()) == "null(0) d2h");
  CHECK(&accelerator(null_device(0)) == &device);  // created once
}

TEST_CASE("the built-in kinds print and parse through their rows") {
  CHECK(to_string(cuda(1)) == "gpu(1)");
  CHECK(to_string(sim(0)) == "sim(0)");
  CHECK(to_string(cpu()) == "cpu(0)");
  CHECK(parse_device("gpu(3)") == cuda(3));
  CHECK(parse_device("sim(1)") == sim(1));
  CHECK(parse_device("cpu(0)") == cpu());
  CHECK(backend(DeviceKind::sim).name == "sim");
  CHECK(backend(DeviceKind::cuda).name == "gpu");
}

TEST_CASE("a kind no backend names is an error everywhere, never a default") {
  use_sim_test_config();
  register_null_backend();
  const auto unknown = static_cast<DeviceKind>(200);
  CHECK_THROWS_WITH_AS(kind_name(unknown), doctest::Contains("not a registered backend"), Error);
  CHECK_THROWS_AS(to_string(Device{unknown, 0}), Error);
  CHECK_THROWS_AS(accelerator_count(unknown), Error);
  CHECK_THROWS_WITH_AS(accelerator(Device{unknown, 0}), doctest::Contains("kind 200"), Error);
  CHECK_THROWS_WITH_AS(backend(DeviceKind::cpu), doctest::Contains("not an accelerator"), Error);
  CHECK_THROWS_WITH_AS(parse_device("tpu(0)"), doctest::Contains("cpu, gpu, sim, null"), Error);
  CHECK_THROWS_WITH_AS(parse_device("sim(x)"), doctest::Contains("'sim(x)' is not a device"),
                       Error);
  CHECK_THROWS_AS(parse_device("sim(1"), Error);
  CHECK_THROWS_AS(parse_device("sim(-1)"), Error);
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    Var v = engine.var();
    CHECK_THROWS_WITH_AS(
        engine->push([](RunContext&) {}, Device{unknown, 0}, {}, {v}, {.name = "lost"}),
        doctest::Contains("'lost'"), Error);
  }
}

TEST_CASE("a null device past the count, and bad rows, are errors") {
  use_sim_test_config();
  register_null_backend();
  CHECK_THROWS_WITH_AS(accelerator(null_device(2)),
                       doctest::Contains("this process has 2 null devices"), Error);
  CHECK_THROWS_AS(accelerator(null_device(-1)), Error);
  Backend taken;
  taken.name = "sim";
  taken.device_count = [](const AcceleratorConfig&) { return 1; };
  taken.create = [](Device, const AcceleratorConfig&) { return std::unique_ptr<Accelerator>(); };
  CHECK_THROWS_WITH_AS(register_backend(taken), doctest::Contains("'sim' is taken"), Error);
  Backend nameless = taken;
  nameless.name = "";
  CHECK_THROWS_AS(register_backend(nameless), Error);
  Backend spaced = taken;
  spaced.name = "my gpu";
  CHECK_THROWS_AS(register_backend(spaced), Error);
  Backend no_factory;
  no_factory.name = "no_factory";
  no_factory.device_count = taken.device_count;
  CHECK_THROWS_WITH_AS(register_backend(no_factory), doctest::Contains("needs both"), Error);
}

TEST_CASE("null ops are ordered by their vars across null, sim and cpu devices") {
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    Var a = engine.var(), b = engine.var();
    std::int64_t va = 0, vb = 0;
    push_sim(*engine, sim(0), {}, {a}, "set on sim", 3, [&va] { va = 1; });
    push_null(*engine, null_device(0), {a}, {a}, "times3", [&va] { va *= 3; });
    push_null(*engine, null_device(1), {a}, {a}, "plus4", [&va] { va += 4; });
    push_sim(*engine, sim(1), {a}, {a}, "times2 on sim", 1, [&va] { va *= 2; });
    push_null(
        *engine, null_device(0), {a}, {a}, "minus1", [&va] { va -= 1; }, Queue::copy_d2h);
    engine->push([&] { vb = va * 10; }, cpu(), {a}, {b}, {.name = "cpu"});
    engine->wait_for_var(b);
    CHECK(vb == 130);
  }
}

TEST_CASE("null device memory is host memory that ops fill and copy") {
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    MemoryPool& pool = accelerator(null_device(0)).device_pool();
    MemoryBlock block = pool.allocate(64 * sizeof(float));
    std::array<float, 64> host{};
    Var x = engine.var(), y = engine.var();
    auto* data = static_cast<float*>(block.data);
    engine.operator->()->push(
        [data](RunContext& ctx) {
          ctx.stream()->enqueue_host([data] { std::fill(data, data + 64, 2.5f); }, {});
        },
        null_device(0), {}, {x}, {.name = "fill"});
    engine->push(
        [data, &host](RunContext& ctx) { ctx.stream()->copy(host.data(), data, sizeof host); },
        null_device(0), {x}, {y}, {.name = "d2h", .queue = Queue::copy_d2h});
    engine->wait_for_var(y);
    CHECK(host[0] == 2.5f);
    CHECK(host[63] == 2.5f);
    CHECK(data[10] == 2.5f);  // readable from the host directly
    engine->push([&pool, block](RunContext&) { pool.free(block); }, null_device(0), {}, {x, y},
                 {.name = "free"});
    engine->wait_all();
  }
}

TEST_CASE("a null device failure poisons downstream ops and wait_all reports it") {
  for (EngineKind kind : kKinds) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    Var a = engine.var(), b = engine.var(), c = engine.var();
    std::atomic<bool> b_ran{false}, c_ran{false};
    push_null(*engine, null_device(0), {}, {a}, "fails on device",
              [] { throw std::runtime_error("null boom"); });
    push_null(*engine, null_device(1), {a}, {b}, "downstream null", [&b_ran] { b_ran = true; });
    engine->push([&c_ran] { c_ran = true; }, cpu(), {b}, {c}, {.name = "downstream cpu"});
    const std::string error = error_of(*engine, c);
    CHECK(error.find("null boom") != std::string::npos);
    CHECK(error.find("'fails on device' on null(0)") != std::string::npos);
    CHECK_FALSE(b_ran.load());
    CHECK_FALSE(c_ran.load());
    push_null(*engine, null_device(0), {}, {a}, "rewrite", [] {});
    CHECK_NOTHROW(engine->wait_for_var(a));
    push_null(*engine, null_device(1), {}, {}, "fails unwatched",
              [] { throw std::runtime_error("late"); });
    CHECK_THROWS_WITH(engine->wait_all(), doctest::Contains("late"));
    CHECK_NOTHROW(engine->wait_all());
  }
}

TEST_CASE("the per-op synchronize mode runs null ops too") {
  SimTestEngine engine(sim_engine_config(EngineKind::threaded, /*synchronize_each_op=*/true));
  Var v = engine.var();
  std::int64_t value = 1;
  for (int i = 0; i < 10; ++i) {
    push_null(*engine, null_device(i % 2), {v}, {v}, "double", [&value] { value *= 2; });
  }
  engine->wait_for_var(v);
  CHECK(value == 1024);
  push_null(*engine, null_device(0), {v}, {v}, "fails", [] { throw std::runtime_error("sync"); });
  CHECK_THROWS_WITH(engine->wait_for_var(v), doctest::Contains("sync"));
}

TEST_CASE("the launcher of null(i) binds null(i) to its thread") {
  SimTestEngine engine(sim_engine_config(EngineKind::threaded));
  Var v = engine.var();
  Device seen[2] = {cpu(), cpu()};
  for (int i = 0; i < 2; ++i) {
    engine->push([&seen, i](RunContext&) { seen[i] = null_device_bound_to_this_thread(); },
                 null_device(i), {}, {v}, {.name = "where am I"});
  }
  engine->wait_for_var(v);
  CHECK(seen[0] == null_device(0));
  CHECK(seen[1] == null_device(1));
}

TEST_CASE("a trace with null ops reads back with its null devices") {
  SimTestEngine engine(sim_engine_config(EngineKind::threaded));
  Var v = engine.var();
  profiler::start();
  push_null(*engine, null_device(1), {}, {v}, "traced", [] {});
  engine->wait_for_var(v);
  profiler::stop();
  const std::string path = "null_backend_test_trace.json";
  profiler::dump(path);
  bool found = false;
  for (const profiler::OpEvent& e : profiler::load(path)) {
    if (e.name == "traced") {
      found = true;
      CHECK(e.device == null_device(1));
    }
  }
  CHECK(found);
  std::remove(path.c_str());
}
