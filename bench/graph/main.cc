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
//   {"workload": "train_step_sim", "system": "eager" | "training_step", "modelled_us",
//    "launches", "seconds", "steps", "latency_us", "model", "device"}
// and the targets. The engine-level measures of captured graphs (replay_ns_per_op,
// metg_stencil_1d's tandem_replay) are in bench_engine. Usually run through
// bench/run.sh graph [--quick].
#include "hybridize_mlp.h"
#include "hybridize_mlp_train.h"
#include "replay_sim_tiny_ops.h"
#include "suite_main.h"
#include "train_step_sim.h"

int main(int argc, char** argv) {
  tandem::bench::SuiteCommandLine line;
  if (!tandem::bench::parse_suite_command_line(argc, argv, "bench_graph",
                                               "[--quick] --out PATH.json", line)) {
    return 2;
  }
  return tandem::bench::run_suite("bench_graph", line.out, [&](tandem::bench::Records& records) {
    tandem::bench::run_hybridize_mlp(line.quick, records);
    tandem::bench::run_hybridize_mlp_train(line.quick, records);
    tandem::bench::run_replay_sim_tiny_ops(line.quick, records);
    tandem::bench::run_train_step_sim(line.quick, records);
  });
}
