// bench_multi_device: training on several devices (issue 14).
//
//   bench_multi_device [--quick] --out PATH.json [--digits DIR]
//                      [--only data_parallel|pipeline|model_parallel]
//
// Writes a JSON list of records (see workloads.h). The sim model it runs with comes from the
// TANDEM_SIM_* variables, which bench/run.sh multi_device sets; every record repeats them.
#include <tandem/tandem.h>

#include <string>

#include "suite_main.h"
#include "workloads.h"

int main(int argc, char** argv) {
  tandem::bench::MultiDeviceOptions options;
  options.digits_dir = TANDEM_DIGITS_DIR;
  tandem::bench::SuiteCommandLine line;
  std::string only;
  if (!tandem::bench::parse_suite_command_line(
          argc, argv, "bench_multi_device",
          "[--quick] --out PATH.json [--digits DIR] [--only data_parallel|pipeline|model_parallel]",
          line, {{"--digits", &options.digits_dir}, {"--only", &only}})) {
    return 2;
  }
  options.quick = line.quick;
  return tandem::bench::run_suite("bench_multi_device", line.out,
                                  [&](tandem::bench::Records& records) {
                                    if (only.empty() || only == "data_parallel") {
                                      tandem::bench::run_data_parallel(options, records);
                                    }
                                    if (only.empty() || only == "pipeline")
                                      tandem::bench::run_pipeline(options, records);
                                    if (only.empty() || only == "model_parallel") {
                                      tandem::bench::run_model_parallel(options, records);
                                    }
                                  });
}
