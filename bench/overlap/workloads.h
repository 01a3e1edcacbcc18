// The overlap suite's workloads. Each runs one after the other (a waitall between the parts)
// and overlapped (no wait in between), profiles the overlapped run, and appends a record
//   {"workload", "device", "sequential_s", "overlapped_s", "overlap_efficiency", ...}.
#pragma once

#include "records.h"
#include "tandem/device.h"

namespace tandem::bench {

// The seeds' 8.3.1: 10 x dot(x, x) on the CPU and 10 on the accelerator.
void run_cpu_and_accelerator(Device device, bool quick, Records& records);
// The seeds' 8.3.2: 10 x dot(x, x) on the accelerator, each result copied to the CPU.
void run_compute_and_copy(Device device, bool quick, Records& records);
// Chunks of a host array: H2D copy -> compute -> D2H copy, equal modelled work per lane.
void run_pipeline(Device device, bool quick, Records& records);
// Small dependent ops on the accelerator, completed by event fences (the engine's mode) vs with
// a stream synchronize per op (AcceleratorConfig::synchronize_each_op): the throughput that
// event-based dependencies buy. Records
//   {"workload": "small_ops_events_vs_sync", "device", "ops", "event_based_s", "sync_per_op_s",
//    "speedup"}.
void run_small_ops(Device device, bool quick, Records& records);

}  // namespace tandem::bench
