// bench_graph: captured graphs seen from the front end (issue 15).
//
//   bench_graph [--quick] --out PATH.json
//
// Writes a JSON list of records:
//   {"workload": "hybridize_mlp", "system": "eager" | "hybridized" | "hybridized_copied" |
//    "plain_loops", "seconds", "calls", "model", "device"}
//   {"workload": "hybridize_mlp_train", "system": "eager" | "hybridized", "seconds", "steps",
//    "model", "device"}
//   {"workload": "replay_sim_tiny_ops", "system": "push" | "replay" | "replay_device_graph",
//    "modelled_us", "seconds", "ops", "latency_us", "device"}
// and the targets. The engine-level measures of captured graphs (replay_ns_per_op,
// metg_stencil_1d's tandem_replay) are in bench_engine. Usually run through
// bench/run.sh graph [--quick].
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "hybridize_mlp.h"
#include "hybridize_mlp_train.h"
#include "records.h"
#include "replay_sim_tiny_ops.h"

int main(int argc, char** argv) {
  bool quick = false;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_graph [--quick] --out PATH.json\n");
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "bench_graph: --out PATH.json is required\n");
    return 2;
  }
  tandem::bench::Records records;
  try {
    tandem::bench::run_hybridize_mlp(quick, records);
    tandem::bench::run_hybridize_mlp_train(quick, records);
    tandem::bench::run_replay_sim_tiny_ops(quick, records);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_graph: %s\n", e.what());
    return 1;
  }
  tandem::bench::print_targets(records);
  return tandem::bench::write_records(records, out, "bench_graph") ? 0 : 1;
}
