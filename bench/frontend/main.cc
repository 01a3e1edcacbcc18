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
#include <cstring>
#include <fstream>
#include <string>

#include "add_scalar_loop.h"
#include "dot_workloads.h"
#include "memory_loop.h"
#include "records.h"

int main(int argc, char** argv) {
  bool quick = false;
  std::string out;
  std::size_t bound = 64;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--max-in-flight") == 0 && i + 1 < argc) {
      bound = static_cast<std::size_t>(std::atoll(argv[++i]));
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: bench_frontend [--quick] --out PATH.json [--max-in-flight N] [--only "
                   "memory_loop|add_scalar_loop|dot]\n");
      return 2;
    }
  }
  if (!only.empty() && only != "memory_loop" && only != "add_scalar_loop" && only != "dot") {
    std::fprintf(stderr,
                 "bench_frontend: --only %s: no such workload group (memory_loop, "
                 "add_scalar_loop or dot)\n",
                 only.c_str());
    return 2;
  }
  if (out.empty()) {
    std::fprintf(stderr, "bench_frontend: --out PATH.json is required\n");
    return 2;
  }
  tandem::bench::Records records;
  try {
    // First: it forks, and a fork is only safe before this process starts any thread.
    const auto wanted = [&](const char* group) { return only.empty() || only == group; };
    if (wanted("memory_loop")) tandem::bench::run_memory_loop(quick, bound, records);
    std::fflush(stdout);
    if (wanted("add_scalar_loop")) tandem::bench::run_add_scalar_loop(quick, records);
    if (wanted("dot")) tandem::bench::run_dot_workloads(quick, records);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_frontend: %s\n", e.what());
    return 1;
  }
  tandem::bench::print_targets(records);
  return tandem::bench::write_records(records, out, "bench_frontend") ? 0 : 1;
}
