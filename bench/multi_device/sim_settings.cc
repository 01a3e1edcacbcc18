// The sim model a bench_multi_device run uses, repeated in every record so that a figure is
// never read without the device model that produced it.
#include <tandem/engine_config.h>

#include "workloads.h"

namespace tandem::bench {

nlohmann::json sim_settings_record() {
  const AcceleratorConfig accel = AcceleratorConfig::from_env();
  return {
      {"sim_devices", accel.sim_devices},         {"sim_gflops", accel.sim_gflops},
      {"sim_memory_gbps", accel.sim_memory_gbps}, {"sim_bus_gbps", accel.sim_bus_gbps},
      {"sim_latency_us", accel.sim_latency_us},   {"sim_compute_streams", accel.compute_streams}};
}

}  // namespace tandem::bench
