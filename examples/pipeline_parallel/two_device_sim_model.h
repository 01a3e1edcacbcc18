// The sim model the two-device timing programs (pipeline_parallel and model_parallel unless the
// TANDEM_SIM_* / TANDEM_ACCEL_STREAMS variables say otherwise; bench_multi_device's pipeline and
// model_parallel workloads always) run with, and why (docs/benchmarks.md, "multi_device:
// pipeline and model parallel").
//
// - A slow device (2 GFLOP/s): the modelled time of a step (~0.85 s for TwoStageShape on one
//   device) dwarfs the host's real work, the kernels the sim runs on the CPU to produce real
//   results (~1.5 GFLOP per step) and the pushes of 1000-20000 ops, so the figures measure the
//   schedule, not a 2-core host shared with other programs.
// - Memory no faster than compute (2 GB/s: 1 flop per byte): what a micro-batch costs whatever
//   its size, reading the weights in each product and each weight gradient's accumulator in the
//   product that adds into it (per layer and micro-batch), weighs as it does on a GPU, so
//   tiny micro-batches waste the device: the left arm of the seed's U-shaped split-size curve.
// - One compute stream per device, as in the figures measured before a sim device's compute
//   streams shared its rate (they do now: a second stream would only fill idle gaps, never
//   double the device's compute), so that runs compare with those figures.
// - A bus slower than memory (0.1 GB/s): an activation crossing devices costs about 1% of a
//   step, as the seed's copies between GPUs do.
#pragma once

#include <tandem/accel/accelerator.h>
#include <tandem/engine_config.h>
#include <tandem/errors.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tandem::examples {

struct SimModelDefault {
  const char* variable;
  const char* value;
};

inline const std::vector<SimModelDefault>& two_device_sim_defaults() {
  static const std::vector<SimModelDefault> defaults = {
      {"TANDEM_SIM_GFLOPS", "2"},
      {"TANDEM_SIM_MEMORY_GBPS", "2"},
      {"TANDEM_SIM_BUS_GBPS", "0.1"},
      {"TANDEM_ACCEL_STREAMS", "1"},
  };
  return defaults;
}

// Sets each default whose variable is unset and configures the accelerators from the
// environment. Must run before the first accelerator use; when the accelerators exist already
// and some variable was unset (another workload of the process used them with its own model),
// nothing changes, the variables set here are removed again (so that records read the model
// really in use) and it returns false.
inline bool use_two_device_sim_model() {
  std::vector<std::string> set_here;
  for (const SimModelDefault& entry : two_device_sim_defaults()) {
    if (std::getenv(entry.variable) != nullptr) continue;
    setenv(entry.variable, entry.value, 0);
    set_here.emplace_back(entry.variable);
  }
  try {
    configure_accelerators(AcceleratorConfig::from_env());
    return true;
  } catch (const Error&) {
    // Configured already: by an earlier call (the variables are set then) or by other code.
    if (set_here.empty()) return true;
    for (const std::string& variable : set_here) unsetenv(variable.c_str());
    std::fprintf(stderr,
                 "note: the accelerators were configured before; the two-device figures use the "
                 "process's sim model, not the one of two_device_sim_model.h\n");
    return false;
  }
}

}  // namespace tandem::examples
