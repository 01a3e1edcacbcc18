// The accelerator launcher thread: which device it runs launch functions on. On cuda(i) a user
// kernel launched on cuda_stream(stream), or a cuBLAS call, goes to the thread's current device,
// so the launcher must make its own device current (Accelerator::bind_thread); sim mirrors the
// same binding so that the engine's side of it is checked on every machine.
#include <doctest/doctest.h>

#include <atomic>
#include <vector>

#include "accel/sim/sim_accelerator.h"
#include "sim_test_support.h"

using namespace tandem;
using namespace tandem_test;

TEST_CASE("launch functions of sim(i) run on a thread bound to sim(i), in every engine") {
  for (EngineKind kind : {EngineKind::threaded, EngineKind::naive}) {
    CAPTURE(engine_kind_name(kind));
    SimTestEngine engine(sim_engine_config(kind));
    // Each device twice, interleaved: a binding left over from the other device would show.
    const std::vector<Device> devices = {sim(1), sim(0), sim(1), sim(0)};
    std::vector<Device> seen(devices.size(), cpu());
    Var done = engine.var();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      engine->push([&seen, i](RunContext&) { seen[i] = detail::sim_device_bound_to_this_thread(); },
                   devices[i], {}, {done}, {.name = "record binding"});
    }
    engine->wait_all();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      CAPTURE(i);
      CHECK(seen[i] == devices[i]);
    }
  }
}
