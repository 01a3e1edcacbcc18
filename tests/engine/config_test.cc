// Configuration and entry points: EngineConfig::from_env, the process-wide engine, and the
// errors push reports for bad arguments.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace {

using tandem::cpu;
using tandem::EngineConfig;
using tandem::EngineKind;
using tandem::Var;
using namespace tandem_test;

// The environment from_env sees in these tests (from_env takes a plain function pointer).
std::map<std::string, std::string> fake_environment;

const char* fake_getenv(const char* name) {
  auto found = fake_environment.find(name);
  return found == fake_environment.end() ? nullptr : found->second.c_str();
}

EngineConfig config_from(std::map<std::string, std::string> environment) {
  fake_environment = std::move(environment);
  return EngineConfig::from_env(&fake_getenv);
}

}  // namespace

TEST_CASE("from_env with no TANDEM_ variables gives the defaults") {
  const EngineConfig config = config_from({});
  const EngineConfig defaults;
  CHECK(config.kind == defaults.kind);
  CHECK(config.cpu_workers == defaults.cpu_workers);
  CHECK(config.priority_workers == defaults.priority_workers);
  CHECK(config.max_ops_in_flight == defaults.max_ops_in_flight);
  CHECK(config.spin_before_park == defaults.spin_before_park);
  CHECK(config.shutdown_timeout == defaults.shutdown_timeout);
  CHECK(config.log_level == defaults.log_level);
  CHECK(defaults.kind == EngineKind::threaded);
  CHECK(defaults.max_ops_in_flight > 0);   // backpressure is on by default
  CHECK_FALSE(defaults.accel.allow_tf32);  // strict fp32 unless asked for
}

TEST_CASE("from_env reads every TANDEM_ variable") {
  const EngineConfig config = config_from({{"TANDEM_ENGINE", "naive"},
                                           {"TANDEM_CPU_WORKERS", "3"},
                                           {"TANDEM_PRIORITY_WORKERS", "0"},
                                           {"TANDEM_MAX_OPS_IN_FLIGHT", "128"},
                                           {"TANDEM_SPIN_US", "7"},
                                           {"TANDEM_SHUTDOWN_TIMEOUT_MS", "1500"},
                                           {"TANDEM_LOG_LEVEL", "debug"}});
  CHECK(config.kind == EngineKind::naive);
  CHECK(config.cpu_workers == 3);
  CHECK(config.priority_workers == 0);
  CHECK(config.max_ops_in_flight == 128);
  CHECK(config.spin_before_park == std::chrono::microseconds(7));
  CHECK(config.shutdown_timeout == std::chrono::milliseconds(1500));
  CHECK(config.log_level == "debug");
  CHECK(config_from({{"TANDEM_ENGINE", "threaded"}}).kind == EngineKind::threaded);
  CHECK(config_from({{"TANDEM_MAX_OPS_IN_FLIGHT", "0"}}).max_ops_in_flight == 0);
}

TEST_CASE("from_env rejects a malformed number with an error naming the variable") {
  const char* const variables[] = {"TANDEM_CPU_WORKERS", "TANDEM_PRIORITY_WORKERS",
                                   "TANDEM_MAX_OPS_IN_FLIGHT", "TANDEM_SPIN_US",
                                   "TANDEM_SHUTDOWN_TIMEOUT_MS"};
  const char* const bad_values[] = {"", "abc", "12x", "-1", "1.5", "99999999999999999999999"};
  for (const char* variable : variables) {
    for (const char* value : bad_values) {
      CAPTURE(variable);
      CAPTURE(value);
      const std::string message = error_of([&] { config_from({{variable, value}}); });
      CHECK(message.find(variable) != std::string::npos);
      CHECK(message.find(std::string("'") + value + "'") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(config_from({{"TANDEM_CPU_WORKERS", "abc"}}), tandem::Error);
  CHECK_THROWS_AS(config_from({{"TANDEM_CPU_WORKERS", "1025"}}), tandem::Error);
  CHECK_THROWS_AS(config_from({{"TANDEM_PRIORITY_WORKERS", "65"}}), tandem::Error);
}

TEST_CASE("from_env rejects an unknown engine kind and names the choices") {
  const std::string message = error_of([] { config_from({{"TANDEM_ENGINE", "turbo"}}); });
  CAPTURE(message);
  CHECK(message.find("TANDEM_ENGINE") != std::string::npos);
  CHECK(message.find("turbo") != std::string::npos);
  CHECK(message.find("threaded") != std::string::npos);
  CHECK(message.find("naive") != std::string::npos);
}

TEST_CASE("from_env trims surrounding whitespace from every value, before and after alike") {
  for (const char* padding : {" ", "\t", "  \n"}) {
    CAPTURE(padding);
    const auto pad = [padding](const char* value, bool before) {
      return before ? std::string(padding) + value : std::string(value) + padding;
    };
    for (bool before : {true, false}) {
      CAPTURE(before);
      const EngineConfig config = config_from({{"TANDEM_ENGINE", pad("naive", before)},
                                               {"TANDEM_CPU_WORKERS", pad("2", before)},
                                               {"TANDEM_PRIORITY_WORKERS", pad("3", before)},
                                               {"TANDEM_MAX_OPS_IN_FLIGHT", pad("500", before)},
                                               {"TANDEM_SPIN_US", pad("7", before)},
                                               {"TANDEM_SHUTDOWN_TIMEOUT_MS", pad("9", before)},
                                               {"TANDEM_LOG_LEVEL", pad("debug", before)},
                                               {"TANDEM_SIM_DEVICES", pad("3", before)},
                                               {"TANDEM_ACCEL_STREAMS", pad("4", before)},
                                               {"TANDEM_SIM_GFLOPS", pad("2.5", before)},
                                               {"TANDEM_SIM_MEMORY_MB", pad("64", before)},
                                               {"TANDEM_ACCEL_SYNC", pad("on", before)},
                                               {"TANDEM_ALLOW_TF32", pad("1", before)}});
      CHECK(config.kind == EngineKind::naive);
      CHECK(config.cpu_workers == 2);
      CHECK(config.priority_workers == 3);
      CHECK(config.max_ops_in_flight == 500);
      CHECK(config.spin_before_park == std::chrono::microseconds(7));
      CHECK(config.shutdown_timeout == std::chrono::milliseconds(9));
      CHECK(config.log_level == "debug");
      CHECK(config.accel.sim_devices == 3);
      CHECK(config.accel.compute_streams == 4);
      CHECK(config.accel.sim_gflops == 2.5);
      CHECK(config.accel.sim_memory_mb == 64);
      CHECK(config.accel.synchronize_each_op);
      CHECK(config.accel.allow_tf32);
    }
  }
  // Only surrounding whitespace: inside a value it is still an error.
  CHECK_THROWS_AS(config_from({{"TANDEM_CPU_WORKERS", "1 2"}}), tandem::Error);
  CHECK_THROWS_AS(config_from({{"TANDEM_CPU_WORKERS", "   "}}), tandem::Error);
}

TEST_CASE("a bad environment value says what is accepted and how to get past it") {
  const std::string engine_message = error_of([] {
    config_from({{"TANDEM_CPU_WORKERS", "four"}});
  });
  CAPTURE(engine_message);
  CHECK(engine_message.find("TANDEM_CPU_WORKERS='four'") != std::string::npos);
  CHECK(engine_message.find("an integer in [0, 1024]") != std::string::npos);
  CHECK(engine_message.find("unset it") != std::string::npos);
  CHECK(engine_message.find("tandem::Engine::set_default(config)") != std::string::npos);
  const std::string accel_message = error_of([] { config_from({{"TANDEM_SIM_DEVICES", "x"}}); });
  CAPTURE(accel_message);
  CHECK(accel_message.find("TANDEM_SIM_DEVICES='x'") != std::string::npos);
  CHECK(accel_message.find("unset it") != std::string::npos);
  CHECK(accel_message.find("tandem::configure_accelerators(config)") != std::string::npos);
  for (const auto& [variable, value] :
       std::map<std::string, std::string>{{"TANDEM_ENGINE", "turbo"},
                                          {"TANDEM_LOG_LEVEL", "chatty"},
                                          {"TANDEM_ACCEL_SYNC", "maybe"},
                                          {"TANDEM_ALLOW_TF32", "tf32"},
                                          {"TANDEM_SIM_BUS_GBPS", "-3"}}) {
    CAPTURE(variable);
    const std::string message = error_of([&] { config_from({{variable, value}}); });
    CAPTURE(message);
    CHECK(message.find(variable + "='" + value + "'") != std::string::npos);
    CHECK(message.find("unset it") != std::string::npos);
  }
}

TEST_CASE("the accelerators read only their own variables, so a bad engine value spares them") {
  ScopedEnv workers("TANDEM_CPU_WORKERS", "many");
  CHECK_THROWS_AS(EngineConfig::from_env(), tandem::Error);
  const tandem::AcceleratorConfig accel = tandem::AcceleratorConfig::from_env();
  CHECK(accel.compute_streams >= 1);
  // The engine side is fixed with a config built in code.
  tandem::Engine::set_default(test_config(EngineKind::threaded));
  CHECK(tandem::Engine::get().kind() == EngineKind::threaded);
  tandem::Engine::set_default(EngineConfig{});
}

TEST_CASE("a push with a queue value outside tandem::Queue fails at push and names the op") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  bool ran = false;
  const std::string message = error_of([&] {
    engine->push([&ran] { ran = true; }, cpu(), {}, {v},
                 {.name = "misqueued", .queue = static_cast<tandem::Queue>(99)});
  });
  CAPTURE(message);
  CHECK(message.find("misqueued") != std::string::npos);
  CHECK(message.find("queue value 99") != std::string::npos);
  engine->wait_all();
  CHECK_FALSE(ran);
  CHECK(engine->stats().ops_pushed == 0);
}

TEST_CASE("creating an engine with an unknown log level fails clearly") {
  EngineConfig config = test_config(EngineKind::threaded);
  config.log_level = "chatty";
  const std::string message = error_of([&] { tandem::Engine::create(config); });
  CAPTURE(message);
  CHECK(message.find("chatty") != std::string::npos);
  CHECK(message.find("TANDEM_LOG_LEVEL") != std::string::npos);
}

TEST_CASE("a push with an invalid var fails at push, names the op, and queues nothing") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var good = engine.var();
  auto captured = std::make_shared<int>(0);
  bool ran = false;
  for (bool in_writes : {false, true}) {
    CAPTURE(in_writes);
    const std::string message = error_of([&] {
      auto body = [&ran, captured] { ran = true; };
      if (in_writes) {
        engine->push(body, cpu(), {good}, {good, Var{}}, {.name = "careless"});
      } else {
        engine->push(body, cpu(), {Var{}}, {good}, {.name = "careless"});
      }
    });
    CAPTURE(message);
    CHECK(message.find("careless") != std::string::npos);
    CHECK(message.find("invalid") != std::string::npos);
  }
  engine->wait_all();
  CHECK_FALSE(ran);
  CHECK(captured.use_count() == 1);  // the rejected op's function was destroyed
  CHECK(engine->stats().ops_pushed == 0);
}

TEST_CASE("a push on a device without a worker queue fails at push and names the op") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  auto captured = std::make_shared<int>(0);
  // Devices that do not exist: sim(0) and cuda(0) may (accelerators), number 63 never does here.
  for (tandem::Device device : {tandem::cuda(63), tandem::sim(63), cpu(1)}) {
    CAPTURE(tandem::to_string(device));
    const std::string message =
        error_of([&] { engine->push([captured] {}, device, {}, {v}, {.name = "misplaced"}); });
    CAPTURE(message);
    CHECK(message.find("misplaced") != std::string::npos);
    CHECK(message.find(tandem::to_string(device)) != std::string::npos);
  }
  CHECK(captured.use_count() == 1);
  CHECK(engine->stats().ops_pushed == 0);
  // The var is untouched: ops on it still run.
  bool ran = false;
  engine->push([&ran] { ran = true; }, cpu(), {}, {v});
  engine->wait_for_var(v);
  CHECK(ran);
}

TEST_CASE("Engine::set_default chooses the kind Engine::get returns") {
  tandem::Engine::set_default(EngineKind::naive);
  CHECK(tandem::Engine::get().kind() == EngineKind::naive);
  CHECK(&tandem::Engine::get() == &tandem::Engine::get());
  tandem::Engine::set_default(EngineKind::threaded);
  CHECK(tandem::Engine::get().kind() == EngineKind::threaded);

  EngineConfig config = test_config(EngineKind::threaded);
  config.max_ops_in_flight = 77;
  tandem::Engine::set_default(config);
  CHECK(tandem::Engine::get().config().max_ops_in_flight == 77);
  tandem::Engine::set_default(EngineConfig{});
}

TEST_CASE("Engine::set_default(kind) keeps the other settings from TANDEM_ variables") {
  for (const char* kind_name : {"naive", "threaded"}) {
    CAPTURE(kind_name);
    ScopedEnv engine_kind("TANDEM_ENGINE", kind_name);
    ScopedEnv workers("TANDEM_CPU_WORKERS", "3");
    tandem::Engine::set_default(EngineConfig::from_env());
    CHECK(std::string(tandem::engine_kind_name(tandem::Engine::get().kind())) == kind_name);
    const EngineKind other =
        std::string(kind_name) == "naive" ? EngineKind::threaded : EngineKind::naive;
    tandem::Engine::set_default(other);  // the kind from the call, the rest from TANDEM_*
    CHECK(tandem::Engine::get().kind() == other);
    CHECK(tandem::Engine::get().config().cpu_workers == 3);
  }
  tandem::Engine::set_default(EngineConfig{});
}

TEST_CASE("Engine::set_default finishes the old engine's ops first") {
  for (EngineKind kind : {EngineKind::threaded, EngineKind::naive}) {
    tandem::Engine::set_default(test_config(EngineKind::threaded));
    tandem::Engine& old_engine = tandem::Engine::get();
    Var v = old_engine.new_var();
    std::atomic<int> done{0};
    for (int i = 0; i < 20; ++i) {
      old_engine.push(
          [&done] {
            std::this_thread::sleep_for(1ms);
            done.fetch_add(1);
          },
          cpu(), {}, {v});
    }
    old_engine.delete_var(v);
    tandem::Engine::set_default(kind);
    CHECK(done.load() == 20);
  }
  tandem::Engine::set_default(EngineConfig{});
}

TEST_CASE("tandem::wait_all waits for the process-wide engine and rethrows its errors") {
  tandem::Engine::set_default(test_config(EngineKind::threaded));
  tandem::Engine& engine = tandem::Engine::get();
  Var v = engine.new_var();
  std::atomic<bool> done{false};
  engine.push(
      [&done] {
        std::this_thread::sleep_for(10ms);
        done.store(true);
      },
      cpu(), {}, {v});
  engine.push([] { throw std::runtime_error("global"); }, cpu(), {v}, {}, {.name = "global op"});
  try {
    tandem::wait_all();
    FAIL("tandem::wait_all should rethrow");
  } catch (const tandem::OpError& error) {
    CHECK(error.op_name() == "global op");
  }
  CHECK(done.load());
  CHECK_NOTHROW(tandem::wait_all());
  engine.delete_var(v);
  tandem::Engine::set_default(EngineConfig{});
}

namespace {

// A tuning knob of the CPU drainers (not an EngineConfig field), read when a threaded engine
// starts: every bad value fails the engine's creation naming the variable and the value; with
// every good one, a stream of pushes on a few vars and sparse pushes (each pattern drives the
// drainers' waits differently) all run. Unsets the variable on the way out.
void check_drainer_knob(const char* variable, std::initializer_list<const char*> bad,
                        std::initializer_list<const char*> good) {
  struct Restore {
    const char* variable;
    ~Restore() { unsetenv(variable); }
  } restore{variable};
  EngineConfig config;
  config.kind = EngineKind::threaded;
  for (const char* value : bad) {
    CAPTURE(value);
    setenv(variable, value, 1);
    const std::string message = error_of([&] { (void)tandem::Engine::create(config); });
    CHECK(message.find(variable) != std::string::npos);
    CHECK(message.find(value) != std::string::npos);
  }
  for (const char* value : good) {
    CAPTURE(value);
    setenv(variable, value, 1);
    auto engine = tandem::Engine::create(config);
    std::vector<Var> vars;
    for (int i = 0; i < 64; ++i) vars.push_back(engine->new_var());
    std::atomic<int> ran{0};
    for (int i = 0; i < 4000; ++i) {
      engine->push([&] { ran.fetch_add(1, std::memory_order_relaxed); }, cpu(), {},
                   {vars[static_cast<std::size_t>(i) % vars.size()]});
      if (i % 1000 == 999) std::this_thread::sleep_for(std::chrono::microseconds(300));
      if (i >= 3000 && i % 100 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (const Var var : vars) engine->delete_var(var);
    engine->wait_all();
    CHECK(ran.load() == 4000);
  }
}

}  // namespace

TEST_CASE("TANDEM_IDLE_POLL_PAUSES is read when a threaded engine starts") {
  check_drainer_knob("TANDEM_IDLE_POLL_PAUSES", {"0", "abc", "4097", "-3"}, {"1", "64", "4096"});
}

// 0 (the stream gap off) is allowed.
TEST_CASE("TANDEM_STREAM_GAP_PAUSES is read when a threaded engine starts") {
  check_drainer_knob("TANDEM_STREAM_GAP_PAUSES", {"abc", "4097", "-1", "1.5"},
                     {"0", "1", "64", "4096"});
}
