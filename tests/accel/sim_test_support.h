// Helpers shared by the sim tests: one process-wide accelerator configuration with a slow cost
// model, so that modelled durations (milliseconds) dominate the CPU time of the test bodies on
// a noisy 2-core machine, and engines of each kind.
#pragma once

#include <doctest/doctest.h>
#include <tandem/accel/accelerator.h>
#include <tandem/engine.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tandem_test {

// 1 GFLOP/s compute, 1 GB/s memory and bus: 1e6 flops or bytes last 1 ms.
inline constexpr double kFlopsPerMs = 1e6;

inline tandem::AcceleratorConfig sim_test_config() {
  tandem::AcceleratorConfig config;
  config.sim_devices = 2;
  config.compute_streams = 2;
  config.sim_gflops = 1.0;
  config.sim_memory_gbps = 1.0;
  config.sim_bus_gbps = 1.0;
  config.sim_latency_us = 10.0;
  config.sim_memory_mb = 64;
  return config;
}

// Every test calls this first: the accelerators are process-wide and configured once.
inline void use_sim_test_config() {
  static std::once_flag once;
  std::call_once(once, [] { tandem::configure_accelerators(sim_test_config()); });
}

// A cost that the sim model holds for `ms` milliseconds.
inline tandem::WorkCost cost_ms(double ms) {
  return {.flops = ms * kFlopsPerMs, .bytes = 0};
}

// A sim op whose device work runs `fn` for `ms` of modelled time.
template <class Fn>
void push_sim(tandem::Engine& engine, tandem::Device device, tandem::VarList reads,
              tandem::VarList writes, const char* name, double ms, Fn fn,
              tandem::Queue queue = tandem::Queue::compute) {
  engine.push(
      [fn, ms](tandem::RunContext& ctx) {
        REQUIRE(ctx.stream() != nullptr);
        ctx.stream()->enqueue_host(fn, cost_ms(ms));
      },
      device, reads, writes, {.name = name, .queue = queue});
}

// What wait_for_var(var) throws ("" if nothing).
inline std::string error_of(tandem::Engine& engine, tandem::Var var) {
  try {
    engine.wait_for_var(var);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

// An engine for one test, and the vars it hands out (var()). When the test ends the vars are
// deleted, as the engine's contract asks of every user, every op is waited for (errors the test
// left unchecked are dropped) and the engine destroyed, so leak checkers find nothing behind.
class SimTestEngine {
 public:
  explicit SimTestEngine(const tandem::EngineConfig& config)
      : engine_(tandem::Engine::create(config)) {}
  ~SimTestEngine() {
    for (tandem::Var v : vars_) engine_->delete_var(v);
    for (int errors = 0; errors < 100000; ++errors) {
      try {
        engine_->wait_all();
        break;
      } catch (const std::exception&) {
      }
    }
  }
  SimTestEngine(const SimTestEngine&) = delete;
  SimTestEngine& operator=(const SimTestEngine&) = delete;

  tandem::Engine* operator->() const { return engine_.get(); }
  tandem::Engine& operator*() const { return *engine_; }
  operator tandem::Engine&() const { return *engine_; }

  tandem::Var var() {
    vars_.push_back(engine_->new_var());
    return vars_.back();
  }

 private:
  std::unique_ptr<tandem::Engine> engine_;
  std::vector<tandem::Var> vars_;
};

inline tandem::EngineConfig sim_engine_config(tandem::EngineKind kind,
                                              bool synchronize_each_op = false) {
  use_sim_test_config();
  tandem::EngineConfig config;
  config.kind = kind;
  config.cpu_workers = 2;
  config.accel.synchronize_each_op = synchronize_each_op;
  return config;
}

inline double ms_between(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e6;
}

}  // namespace tandem_test
