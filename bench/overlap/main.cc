// bench_overlap: copy/compute and CPU/accelerator overlap (issue #5).
//
//   bench_overlap [--quick] --out PATH.json
//
// Writes a JSON list of records
//   {"workload", "device", "sequential_s", "overlapped_s", "overlap_efficiency", ...}
// for the seeds' CPU || accelerator program (cpu_and_accelerator), their run || copy program
// (run_and_copy), a chunked H2D -> compute -> D2H pipeline (h2d_compute_d2h_pipeline) and small
// dependent ops with event fences vs a synchronize per op (small_ops_events_vs_sync), on sim(0)
// and on gpu(0) when there is one, plus "targets" records. Usually run through
// bench/run.sh overlap [--quick].
//
// The sim device is configured slow (2 GFLOP/s, 4 GB/s memory, 0.25 GB/s bus) so that its
// modelled times dwarf the real CPU time its kernels take here: on a 2-core machine the sim
// streams' CPU bodies would otherwise compete with the CPU workload being overlapped.
#include <algorithm>
#include <cstdio>
#include <vector>

#include <tandem/tandem.h>

#include "suite_main.h"
#include "tandem/accel/accelerator.h"
#include "workloads.h"

int main(int argc, char** argv) {
  tandem::bench::SuiteCommandLine line;
  if (!tandem::bench::parse_suite_command_line(argc, argv, "bench_overlap",
                                               "[--quick] --out PATH.json", line)) {
    return 2;
  }
  return tandem::bench::run_suite("bench_overlap", line.out, [&](tandem::bench::Records& records) {
    tandem::AcceleratorConfig config = tandem::EngineConfig::from_env().accel;
    config.sim_devices = std::max(config.sim_devices, 1);
    config.sim_gflops = 2.0;
    config.sim_memory_gbps = 4.0;
    config.sim_bus_gbps = 0.25;
    config.sim_latency_us = 5.0;
    tandem::configure_accelerators(config);
    std::vector<tandem::Device> devices{tandem::sim(0)};
    if (tandem::device_count(tandem::DeviceKind::cuda) > 0) {
      devices.push_back(tandem::cuda(0));
    } else {
      std::printf("SKIPPED gpu(0): no CUDA device\n");
    }
    for (tandem::Device device : devices) {
      std::printf("%s\n", tandem::device_name(device).c_str());
      tandem::bench::run_cpu_and_accelerator(device, line.quick, records);
      tandem::bench::run_compute_and_copy(device, line.quick, records);
      tandem::bench::run_pipeline(device, line.quick, records);
      tandem::bench::run_small_ops(device, line.quick, records);
    }
  });
}
