// bench_multi_device: training on several devices (issue 14).
//
//   bench_multi_device [--quick] --out PATH.json [--digits DIR]
//                      [--only data_parallel|pipeline|model_parallel]
//
// Writes a JSON list of records (see workloads.h). The sim model it runs with comes from the
// TANDEM_SIM_* variables, which bench/run.sh multi_device sets; every record repeats them.
#include <tandem/tandem.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "records.h"
#include "workloads.h"

int main(int argc, char** argv) {
  tandem::bench::MultiDeviceOptions options;
  options.digits_dir = TANDEM_DIGITS_DIR;
  std::string out, only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      options.quick = true;
    } else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--digits") == 0 && i + 1 < argc) {
      options.digits_dir = argv[++i];
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: bench_multi_device [--quick] --out PATH.json [--digits DIR] "
                   "[--only data_parallel|pipeline|model_parallel]\n");
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "bench_multi_device: --out PATH.json is required\n");
    return 2;
  }
  tandem::bench::Records records;
  try {
    if (only.empty() || only == "data_parallel") {
      tandem::bench::run_data_parallel(options, records);
    }
    if (only.empty() || only == "pipeline") tandem::bench::run_pipeline(options, records);
    if (only.empty() || only == "model_parallel") {
      tandem::bench::run_model_parallel(options, records);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_multi_device: %s\n", e.what());
    return 1;
  }
  tandem::bench::print_targets(records);
  return tandem::bench::write_records(records, out, "bench_multi_device") ? 0 : 1;
}
