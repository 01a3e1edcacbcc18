#include "replay_sim_tiny_ops.h"

#include <tandem/accel/accelerator.h>
#include <tandem/accel/stream.h>
#include <tandem/engine.h>
#include <tandem/graph.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

// The sim's modelled clock (SimStream's counters) is internal to the engine.
#include "accel/sim/sim_stream.h"

namespace tandem::bench {

namespace {

constexpr int kOps = 64;

std::int64_t modelled_busy_ns() {
  Accelerator& device = accelerator(sim(0));
  std::int64_t total = 0;
  for (int i = 0; i < device.compute_streams(); ++i) {
    total += dynamic_cast<detail::SimStream&>(device.stream(Queue::compute, i)).modelled_busy_ns();
  }
  return total;
}

struct Round {
  double seconds = 0;
  double modelled_us = 0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// `rounds` rounds of kOps chained ops on sim(0); the medians per round.
Round measure(const char* system, int rounds) {
  const bool replay = system[0] == 'r';
  EngineConfig config = EngineConfig::from_env();
  config.device_graphs = std::string(system) == "replay_device_graph";
  auto engine = Engine::create(config);
  Var x = engine->new_var();
  std::int64_t value = 0;
  auto push_chain = [&] {
    for (int i = 0; i < kOps; ++i) {
      engine->push(
          [&value](RunContext& ctx) { ctx.stream()->enqueue_host([&value] { ++value; }, {}); },
          sim(0), {x}, {x}, {.name = "tiny"});
    }
  };
  CapturedGraph chain;
  if (replay) chain = capture(*engine, push_chain);
  auto one_round = [&] {
    if (replay) {
      chain.replay();
    } else {
      push_chain();
    }
  };
  one_round();  // warm-up (and the device graph's recording)
  engine->wait_for_var(x);
  std::vector<double> seconds, modelled;
  for (int r = 0; r < rounds; ++r) {
    const std::int64_t busy_before = modelled_busy_ns();
    const auto start = std::chrono::steady_clock::now();
    one_round();
    engine->wait_for_var(x);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    modelled.push_back(static_cast<double>(modelled_busy_ns() - busy_before) / 1e3);
  }
  chain = CapturedGraph();
  engine->delete_var(x);
  engine->wait_all();
  return {median(seconds), median(modelled)};
}

}  // namespace

void run_replay_sim_tiny_ops(bool quick, Records& records) {
  const int rounds = quick ? 51 : 201;
  const double latency_us = AcceleratorConfig::from_env().sim_latency_us;
  for (const char* system : {"push", "replay", "replay_device_graph"}) {
    const Round round = measure(system, rounds);
    std::printf("replay_sim_tiny_ops: %d ops, %-19s modelled %8.1f us, wall %8.1f us\n", kOps,
                system, round.modelled_us, round.seconds * 1e6);
    records.push_back({{"workload", "replay_sim_tiny_ops"},
                       {"system", system},
                       {"modelled_us", round.modelled_us},
                       {"seconds", round.seconds},
                       {"ops", kOps},
                       {"latency_us", latency_us},
                       {"device", "sim(0)"}});
  }
}

}  // namespace tandem::bench
