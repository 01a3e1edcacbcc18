// bench_frontend: the front end's async-vs-sync suite (issue #3).
//
//   bench_frontend [--quick] --out PATH.json [--max-in-flight N] [--only WORKLOAD]
//
// Writes a JSON list of records:
//   {"workload": "add_scalar_loop", "system": "sync"|"async"|"naive", "array_size": N, "seconds":
//   s}
//   {"workload": "memory_loop", "system": "synced"|"unbounded"|"backpressure", "peak_rss_mb": m,
//    "seconds": s}
//   dot_10x_independent, dot_10x_dependent, dot_sum, dot_2000 (tandem vs openblas), and
//   "targets" records judging the targets from the numbers of this run.
// --quick takes < 2 min on 2 cores. Usually run through bench/run.sh frontend [--quick].
// --only memory_loop|add_scalar_loop|dot runs one group of workloads (to repeat one quickly).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "add_scalar_loop.h"
#include "dot_workloads.h"
#include "memory_loop.h"
#include "suite_main.h"

int main(int argc, char** argv) {
  tandem::bench::SuiteCommandLine line;
  std::string max_in_flight = "64", only;
  if (!tandem::bench::parse_suite_command_line(
          argc, argv, "bench_frontend",
          "[--quick] --out PATH.json [--max-in-flight N] [--only memory_loop|add_scalar_loop|dot]",
          line, {{"--max-in-flight", &max_in_flight}, {"--only", &only}})) {
    return 2;
  }
  if (!only.empty() && only != "memory_loop" && only != "add_scalar_loop" && only != "dot") {
    std::fprintf(stderr,
                 "bench_frontend: --only %s: no such workload group (memory_loop, "
                 "add_scalar_loop or dot)\n",
                 only.c_str());
    return 2;
  }
  const auto bound = static_cast<std::size_t>(std::atoll(max_in_flight.c_str()));
  return tandem::bench::run_suite("bench_frontend", line.out, [&](tandem::bench::Records& records) {
    // First: it forks, and a fork is only safe before this process starts any thread.
    const auto wanted = [&](const char* group) { return only.empty() || only == group; };
    if (wanted("memory_loop")) tandem::bench::run_memory_loop(line.quick, bound, records);
    std::fflush(stdout);
    if (wanted("add_scalar_loop")) tandem::bench::run_add_scalar_loop(line.quick, records);
    if (wanted("dot")) tandem::bench::run_dot_workloads(line.quick, records);
  });
}
