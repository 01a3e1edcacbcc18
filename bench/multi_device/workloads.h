// The workloads of bench_multi_device. Each appends one record per measured configuration to
// `records`; every record names the sim settings it ran with (sim_settings_record()).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "records.h"

namespace tandem::bench {

struct MultiDeviceOptions {
  bool quick = false;
  std::string digits_dir;
};

// The accelerator settings this process runs with (sim compute rate, bandwidths, latency,
// device count), as JSON fields to merge into a record.
nlohmann::json sim_settings_record();

// {"workload": "data_parallel", "system": "tandem", "devices": N, "seconds_per_epoch",
//  "exchange_hidden", ...} for N = 1, 2, 4.
void run_data_parallel(const MultiDeviceOptions& options, Records& records);
// {"workload": "pipeline", "devices": 1 or 2, "split_size": S, "seconds", ...}: the sweep.
void run_pipeline(const MultiDeviceOptions& options, Records& records);
// {"workload": "model_parallel", "devices": 1 or 2, "seconds", ...}.
void run_model_parallel(const MultiDeviceOptions& options, Records& records);

}  // namespace tandem::bench
