// The command line both fuzzers share (fuzz_files, fuzz_ops): the run's seed, time budget and
// iteration count, the corpus to replay and where to write new entries, and the per-input time
// limit, each settable from the environment too (TANDEM_FUZZ_SEED, TANDEM_FUZZ_SECONDS,
// TANDEM_FUZZ_CALL_LIMIT_S: what .ci/run and tests/fuzz/CMakeLists.txt set). A fuzzer adds its
// own switches and valued flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace tandem::fuzz {

struct FuzzRunOptions {
  std::uint64_t seed = 20261128;
  double seconds = 10;
  std::int64_t iterations = -1;    // -1: until the time budget is spent
  std::int64_t only = -1;          // run only this iteration (replays one input)
  std::int64_t call_limit_ms = 0;  // one input's time limit: the fuzzer's default, or the env's
  std::string corpus;
  std::string write_corpus;
  bool show_features = false;  // print every feature reached at the end
};

// A fuzzer's own flags: each switch sets its bool, each valued flag takes the next argument.
struct FuzzToolFlags {
  std::vector<std::pair<std::string, bool*>> switches;
  std::vector<std::pair<std::string, std::string*>> values;
};

// Fills `options` from the environment, then from argv. An unknown flag, or one missing its
// value, prints "`tool`: the problem (`usage`)" and exits with status 2.
inline void parse_fuzz_options(int argc, char** argv, const char* tool, const char* usage,
                               FuzzRunOptions& options, const FuzzToolFlags& own) {
  if (const char* env = std::getenv("TANDEM_FUZZ_SECONDS")) options.seconds = std::atof(env);
  if (const char* env = std::getenv("TANDEM_FUZZ_SEED"))
    options.seed = std::strtoull(env, nullptr, 10);
  if (const char* env = std::getenv("TANDEM_FUZZ_CALL_LIMIT_S"))
    options.call_limit_ms = static_cast<std::int64_t>(1000 * std::atof(env));
  const auto fail = [&](const std::string& problem) {
    std::fprintf(stderr, "%s: %s (%s)\n", tool, problem.c_str(), usage);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    bool* switched = flag == "--show-features" ? &options.show_features : nullptr;
    for (const auto& [name, target] : own.switches) {
      if (flag == name) switched = target;
    }
    if (switched != nullptr) {
      *switched = true;
      continue;
    }
    if (i + 1 >= argc) fail(flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "--seed") {
      options.seed = std::strtoull(value, nullptr, 10);
    } else if (flag == "--seconds") {
      options.seconds = std::atof(value);
    } else if (flag == "--iterations") {
      options.iterations = std::atoll(value);
    } else if (flag == "--only") {
      options.only = std::atoll(value);
    } else if (flag == "--corpus") {
      options.corpus = value;
    } else if (flag == "--write-corpus") {
      options.write_corpus = value;
    } else {
      std::string* target = nullptr;
      for (const auto& [name, field] : own.values) {
        if (flag == name) target = field;
      }
      if (target == nullptr) fail("unknown flag " + flag);
      *target = value;
    }
  }
}

// Prints "`tool`: seed S, corpus DIR (N entries), <what the run does>" and flushes, so that a
// run that dies still says how to reproduce it.
inline void print_run(const char* tool, const FuzzRunOptions& options, std::size_t entries) {
  const std::string extent = options.only >= 0 ? "iteration " + std::to_string(options.only)
                             : options.iterations >= 0
                                 ? std::to_string(options.iterations) + " iterations"
                                 : std::to_string(options.seconds) + " s";
  std::printf("%s: seed %llu, corpus %s (%zu entries), %s\n", tool,
              static_cast<unsigned long long>(options.seed),
              options.corpus.empty() ? "none" : options.corpus.c_str(), entries, extent.c_str());
  std::fflush(stdout);
}

}  // namespace tandem::fuzz
