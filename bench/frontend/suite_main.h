// What the mains of the suites that share records.h (bench_frontend, bench_graph, bench_overlap,
// bench_training, bench_multi_device) have in common: their command line,
//   bench_<suite> [--quick] --out PATH.json [the suite's own options, each with one value]
// and their ending: run the workloads, print the targets, write the records.
#pragma once

#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <string>

#include "records.h"

namespace tandem::bench {

// An option of a suite's own that takes one value: `--digits DIR` stores DIR in *value.
struct ValueOption {
  const char* flag;
  std::string* value;
};

struct SuiteCommandLine {
  bool quick = false;  // --quick: a shorter run
  std::string out;     // --out PATH.json: where the records go
};

// Parses argv into `line` and `options`. False after a message on stderr naming `program`: the
// usage (`program` then `arguments`) for an argument it does not know or a missing value, or
// that --out is required.
inline bool parse_suite_command_line(int argc, char** argv, const char* program,
                                     const char* arguments, SuiteCommandLine& line,
                                     std::initializer_list<ValueOption> options = {}) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      line.quick = true;
      continue;
    }
    std::string* value = nullptr;
    if (std::strcmp(argv[i], "--out") == 0) value = &line.out;
    for (const ValueOption& option : options) {
      if (std::strcmp(argv[i], option.flag) == 0) value = option.value;
    }
    if (value == nullptr || i + 1 == argc) {
      std::fprintf(stderr, "usage: %s %s\n", program, arguments);
      return false;
    }
    *value = argv[++i];
  }
  if (line.out.empty()) {
    std::fprintf(stderr, "%s: --out PATH.json is required\n", program);
    return false;
  }
  return true;
}

// Runs `workloads(records)`, prints the targets among the records and writes them to `out`.
// Returns the suite's exit status: 1 after a message on stderr naming `program` if a workload
// throws or the file cannot be written.
template <class Workloads>
int run_suite(const char* program, const std::string& out, Workloads&& workloads) {
  Records records;
  try {
    workloads(records);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
  print_targets(records);
  return write_records(records, out, program) ? 0 : 1;
}

}  // namespace tandem::bench
