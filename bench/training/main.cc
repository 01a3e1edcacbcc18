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
#include <cstring>
#include <string>

#include "digits_workloads.h"
#include "records.h"
#include "tiny_mlp_step.h"

int main(int argc, char** argv) {
  bool quick = false;
  std::string out, digits_dir = TANDEM_DIGITS_DIR;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--digits") == 0 && i + 1 < argc) {
      digits_dir = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_training [--quick] --out PATH.json [--digits DIR]\n");
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "bench_training: --out PATH.json is required\n");
    return 2;
  }
  if (!tandem::data::digits_available(digits_dir)) {
    std::fprintf(stderr, "bench_training: the digits are not in %s (run scripts/fetch-digits.sh)\n",
                 digits_dir.c_str());
    return 1;
  }
  tandem::bench::Records records;
  try {
    // First: it forks, and a fork is only safe before this process starts any thread.
    tandem::bench::run_lenet_digits(digits_dir, quick, records);
    std::fflush(stdout);
    const auto digits = tandem::data::load_digits(digits_dir);
    tandem::bench::run_tiny_mlp_step(digits, quick, records);
    tandem::bench::run_lenet_step(digits_dir, quick, records);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_training: %s\n", e.what());
    return 1;
  }
  return tandem::bench::write_records(records, out, "bench_training") ? 0 : 1;
}
