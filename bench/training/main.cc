// bench_training: training with tandem's autograd, layers and Trainer (issue 13).
//
//   bench_training [--quick] --out PATH.json [--digits DIR]
//
// Writes a JSON list of records, one per (workload, system, device):
//   {"workload": "lenet_digits", "system": "tandem", "device", "model", "test_accuracy",
//    "seconds_per_epoch", "peak_rss_mb", "epochs"}
//   {"workload": "lenet_step", "system": "tandem", "device", "model", "seconds_per_step"}
//   {"workload": "tiny_mlp_step", "system": "tandem" | "tandem_handwritten", "device",
//    "seconds_per_step"}
// The JAX peer's records (jax_eager, jax_jit) and the targets are added by
// bench/training/jax_peer.py. Usually run through bench/run.sh training [--quick].
#include <tandem/tandem.h>

#include <cstdio>
#include <string>

#include "digits_workloads.h"
#include "suite_main.h"
#include "tiny_mlp_step.h"

int main(int argc, char** argv) {
  tandem::bench::SuiteCommandLine line;
  std::string digits_dir = TANDEM_DIGITS_DIR;
  if (!tandem::bench::parse_suite_command_line(argc, argv, "bench_training",
                                               "[--quick] --out PATH.json [--digits DIR]", line,
                                               {{"--digits", &digits_dir}})) {
    return 2;
  }
  if (!tandem::data::digits_available(digits_dir)) {
    std::fprintf(stderr, "bench_training: the digits are not in %s (run scripts/fetch-digits.sh)\n",
                 digits_dir.c_str());
    return 1;
  }
  return tandem::bench::run_suite("bench_training", line.out, [&](tandem::bench::Records& records) {
    // First: it forks, and a fork is only safe before this process starts any thread.
    tandem::bench::run_lenet_digits(digits_dir, line.quick, records);
    std::fflush(stdout);
    const auto digits = tandem::data::load_digits(digits_dir);
    tandem::bench::run_tiny_mlp_step(digits, line.quick, records);
    tandem::bench::run_lenet_step(digits_dir, line.quick, records);
  });
}
