// tandem_fuzz_ops: a deterministic random op-sequence fuzzer. Bytes become a program of NDArray
// ops over cpu, sim(0) and sim(1) (tests/fuzz/op_program.h): creation, element-wise, dot,
// reductions, views, copies between devices, in-place writes, take with indices out of range
// (an error at the sync point), waits, reads, dropped handles while their ops are pending, and
// switches of the engine new arrays go to. Each program runs on three naive engines and on a
// threaded set (threaded; threaded with one worker and 4 ops in flight; naive), and every event
// must agree: each value read back bit for bit, each error at the call or at a sync point (same
// instruction, same type and message), the errors of the closing waitall calls in order, the
// final value of every slot. An exception that is not a tandem::Error starting with "tandem", or
// a program running past the watchdog's limit, fails too.
//
//   tandem_fuzz_ops [--seed N] [--seconds S] [--iterations K] [--only I] [--corpus DIR]
//                   [--write-corpus DIR] [--print] [--hex HEX] [--file PATH] [--verbose]
//                   [--show-features]
//
// The corpus (default tests/fuzz/corpus/ops, one program per file) is replayed first: iteration
// I < corpus size is entry I. Later iterations are a function of (seed, I, corpus): a fresh
// random program or a mutation of a corpus entry. A failure prints the program as C++-like text,
// its bytes in hex, and `--seed N --only I`; `--hex HEX` or `--file PATH` runs one program;
// `--print` prints the program(s) instead of running them. `--write-corpus DIR` writes to DIR
// each input that reached a feature (op variant x result kind, see op_program.h) no earlier
// input reached, minimised by dropping instructions while it still reaches them.
// Budget: --seconds, else TANDEM_FUZZ_SECONDS, else 10; --iterations K stops after K inputs.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "corpus.h"
#include "fuzz_options.h"
#include "fuzz_watchdog.h"
#include "op_program.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#include <sanitizer/common_interface_defs.h>
#define TANDEM_FUZZ_SANITIZED 1
#endif

#ifndef TANDEM_FUZZ_OPS_CORPUS
#define TANDEM_FUZZ_OPS_CORPUS ""
#endif

namespace {

namespace fs = std::filesystem;
using tandem::fuzz::Bytes;
using tandem::fuzz::Outcome;
using tandem::fuzz::Program;
using Rng = std::mt19937_64;

// ---- what is running, for the watchdog and the sanitizers' death callback ---------------------

std::mutex g_case_mutex;
std::string g_case = "setting up";  // "iteration I (reproduce: ...)\n<program>"
char g_case_line[256] = "setting up";
std::atomic<std::int64_t> g_started_ms{0};  // 0: no program under way

using tandem::fuzz::now_ms;

void watch(std::int64_t limit_ms, const std::atomic<bool>& done) {
  tandem::fuzz::watch_inputs(limit_ms, g_started_ms, done, [](std::int64_t limit) {
    std::lock_guard<std::mutex> lock(g_case_mutex);
    std::fprintf(stderr,
                 "fuzz_ops: FAILURE: a program ran past the watchdog's limit (%lld ms) in %s\n",
                 static_cast<long long>(limit), g_case.c_str());
    std::abort();
  });
}

// ---- inputs ------------------------------------------------------------------------------------

std::size_t below(Rng& rng, std::size_t n) {
  return n == 0 ? 0 : static_cast<std::size_t>(rng() % n);
}

constexpr std::size_t kStep = tandem::fuzz::kInstructionBytes;

Bytes random_instruction(Rng& rng) {
  Bytes in(kStep);
  for (unsigned char& b : in) b = static_cast<unsigned char>(rng());
  in[0] =
      static_cast<unsigned char>(below(rng, static_cast<std::size_t>(tandem::fuzz::Opcode::count)));
  return in;
}

Bytes random_program(Rng& rng) {
  Bytes bytes;
  for (std::size_t n = 4 + below(rng, 40); n > 0; --n) {
    const Bytes in = random_instruction(rng);
    bytes.insert(bytes.end(), in.begin(), in.end());
  }
  return bytes;
}

// 1-4 edits at instruction granularity (insert, delete, duplicate, swap, splice) or of one byte.
void mutate(Bytes& bytes, const Bytes& other, Rng& rng) {
  bytes.resize(bytes.size() / kStep * kStep);
  for (std::size_t edits = 1 + below(rng, 4); edits > 0; --edits) {
    const std::size_t count = bytes.size() / kStep;
    const auto at = [&](std::size_t i) {
      return bytes.begin() + static_cast<std::ptrdiff_t>(i * kStep);
    };
    switch (below(rng, 7)) {
      case 0: {  // an instruction inserted
        const Bytes in = random_instruction(rng);
        bytes.insert(at(below(rng, count + 1)), in.begin(), in.end());
        break;
      }
      case 1:  // an instruction deleted
        if (count > 1) {
          const std::size_t i = below(rng, count);
          bytes.erase(at(i), at(i + 1));
        }
        break;
      case 2:  // an instruction duplicated
        if (count > 0) {
          const std::size_t i = below(rng, count);
          const Bytes in(at(i), at(i + 1));
          bytes.insert(at(below(rng, count + 1)), in.begin(), in.end());
        }
        break;
      case 3:  // two instructions swapped
        if (count > 1) {
          const std::size_t i = below(rng, count), j = below(rng, count);
          if (i != j) std::swap_ranges(at(i), at(i + 1), at(j));
        }
        break;
      case 4: {  // a splice: this program's start, the other's end
        const std::size_t cut = below(rng, count + 1);
        const std::size_t other_cut = below(rng, other.size() / kStep + 1) * kStep;
        bytes.resize(cut * kStep);
        if (other_cut <= other.size()) {
          bytes.insert(bytes.end(), other.begin() + static_cast<std::ptrdiff_t>(other_cut),
                       other.end());
        }
        bytes.resize(bytes.size() / kStep * kStep);
        break;
      }
      default:  // one argument byte (or opcode) changed
        if (!bytes.empty()) bytes[below(rng, bytes.size())] = static_cast<unsigned char>(rng());
    }
  }
  if (bytes.size() > tandem::fuzz::kMaxInstructions * kStep) {
    bytes.resize(tandem::fuzz::kMaxInstructions * kStep);
  }
}

std::string hex(const Bytes& bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string text;
  for (unsigned char b : bytes) {
    text += kDigits[b >> 4];
    text += kDigits[b & 15];
  }
  return text;
}

Bytes from_hex(const std::string& text) {
  Bytes bytes;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    bytes.push_back(static_cast<unsigned char>(std::stoi(text.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

// ---- comparing two runs
// --------------------------------------------------------------------------

// "" when the runs agree and neither saw an unclear error; else what differs.
std::string compare(const Program& program, const Outcome& expected, const Outcome& got) {
  for (const Outcome* outcome : {&expected, &got}) {
    if (!outcome->unclear.empty()) {
      return std::string("an unclear error on the ") +
             (outcome == &expected ? "naive" : "threaded") +
             " engines: " + outcome->unclear.front();
    }
  }
  const std::size_t n = std::min(expected.events.size(), got.events.size());
  for (std::size_t i = 0; i <= n; ++i) {
    if (i < n && expected.events[i] == got.events[i]) continue;
    if (i == n && expected.events.size() == got.events.size()) return "";
    const std::size_t instruction =
        i < expected.instruction.size() ? expected.instruction[i] : got.instruction[i];
    const std::string where = instruction < program.instructions.size()
                                  ? "instruction " + std::to_string(instruction) + " (" +
                                        tandem::fuzz::to_text(program.instructions[instruction]) +
                                        ")"
                                  : "the closing checks";
    return "event " + std::to_string(i) + ", at " + where +
           ":\n  naive:    " + (i < expected.events.size() ? expected.events[i] : "(none)") +
           "\n  threaded: " + (i < got.events.size() ? got.events[i] : "(none)");
  }
  return "";
}

// ---- options
// -------------------------------------------------------------------------------------

struct Options : tandem::fuzz::FuzzRunOptions {
  std::string hex;
  std::string file;
  bool print = false;
  bool verbose = false;
};

Options parse_options(int argc, char** argv) {
  Options options;
  options.call_limit_ms = 60000;
  options.corpus = TANDEM_FUZZ_OPS_CORPUS;
  tandem::fuzz::parse_fuzz_options(
      argc, argv, "fuzz_ops",
      "--seed N --seconds S --iterations K --only I --corpus DIR --write-corpus DIR --hex HEX "
      "--file PATH --print --verbose --show-features",
      options,
      {{{"--print", &options.print}, {"--verbose", &options.verbose}},
       {{"--hex", &options.hex}, {"--file", &options.file}}});
  return options;
}

struct Fuzzer {
  Options options;
  std::vector<tandem::fuzz::CorpusEntry> corpus;
  tandem::fuzz::EngineSet naive = tandem::fuzz::naive_engines();
  tandem::fuzz::EngineSet threaded = tandem::fuzz::threaded_engines();
  tandem::fuzz::FeatureSet features;
  std::size_t written = 0;
  std::size_t values = 0, oks = 0, call_errors = 0, sync_errors = 0;

  // The input of iteration I.
  Bytes input(std::int64_t iteration, std::string& origin) {
    if (static_cast<std::size_t>(iteration) < corpus.size()) {
      origin = "corpus entry " + corpus[static_cast<std::size_t>(iteration)].name;
      return corpus[static_cast<std::size_t>(iteration)].bytes;
    }
    Rng rng(options.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(iteration));
    if (corpus.empty() || below(rng, 2) == 0) {
      origin = "a random program";
      return random_program(rng);
    }
    const auto& base = corpus[below(rng, corpus.size())];
    origin = "a mutation of " + base.name;
    Bytes bytes = base.bytes;
    mutate(bytes, corpus[below(rng, corpus.size())].bytes, rng);
    return bytes;
  }

  // Runs one program on both engine sets; returns false (after reporting) on a failure.
  bool check(const Bytes& bytes, const std::string& label, Outcome* reference = nullptr) {
    const Program program = tandem::fuzz::decode(bytes);
    {
      std::lock_guard<std::mutex> lock(g_case_mutex);
      g_case = label + "\nthe program (hex " + hex(tandem::fuzz::encode(program)) + "):\n" +
               tandem::fuzz::to_text(program);
      std::snprintf(g_case_line, sizeof g_case_line, "%s", label.c_str());
    }
    g_started_ms.store(now_ms());
    Outcome expected = tandem::fuzz::run(program, naive);
    const Outcome got = tandem::fuzz::run(program, threaded);
    g_started_ms.store(0);
    values += expected.values;
    oks += expected.oks;
    call_errors += expected.call_errors;
    sync_errors += expected.sync_errors;
    if (options.verbose) {
      std::printf("%s\n%s", label.c_str(), tandem::fuzz::to_text(program).c_str());
      for (std::size_t i = 0; i < expected.events.size(); ++i) {
        std::printf("  [%zu] %.300s\n", expected.instruction[i], expected.events[i].c_str());
      }
    }
    const std::string difference = compare(program, expected, got);
    if (reference) *reference = std::move(expected);
    if (difference.empty()) return true;
    std::lock_guard<std::mutex> lock(g_case_mutex);
    std::fprintf(stderr, "fuzz_ops: FAILURE: %s\nin %s\n", difference.c_str(), g_case.c_str());
    return false;
  }

  // Drops instructions while the program still reaches `wanted` (on the naive engines).
  Bytes minimise(Bytes bytes, const std::vector<std::string>& wanted) {
    for (std::size_t i = bytes.size() / kStep; i-- > 0;) {
      Bytes shorter = bytes;
      shorter.erase(shorter.begin() + static_cast<std::ptrdiff_t>(i * kStep),
                    shorter.begin() + static_cast<std::ptrdiff_t>((i + 1) * kStep));
      const Outcome outcome = tandem::fuzz::run(tandem::fuzz::decode(shorter), naive);
      if (tandem::fuzz::has_all(outcome.features, wanted)) bytes = std::move(shorter);
    }
    return bytes;
  }

  // A corpus entry's features count (`replayed`), but only new inputs are written.
  void keep_if_new(const Bytes& bytes, const Outcome& outcome, bool replayed) {
    const std::vector<std::string> added = features.add(outcome.features);
    if (added.empty() || replayed || options.write_corpus.empty()) return;
    const Bytes small = minimise(bytes, added);
    tandem::fuzz::write_corpus_entry(options.write_corpus, "ops", small);
    ++written;
  }
};

}  // namespace

int main(int argc, char** argv) {
  Fuzzer fuzzer;
  fuzzer.options = parse_options(argc, argv);
  const Options& options = fuzzer.options;
#ifdef TANDEM_FUZZ_SANITIZED
  // A sanitizer's report ends the process without our report: name the case to reproduce.
  __sanitizer_set_death_callback(
      [] { std::fprintf(stderr, "fuzz_ops: FAILURE: a sanitizer report in %s\n", g_case_line); });
#endif
  if (!options.hex.empty() || !options.file.empty()) {
    const Bytes bytes =
        options.hex.empty() ? tandem::fuzz::read_file_bytes(options.file) : from_hex(options.hex);
    if (options.print) {
      std::printf("%s", tandem::fuzz::to_text(tandem::fuzz::decode(bytes)).c_str());
      return 0;
    }
    Outcome outcome;
    if (!fuzzer.check(bytes, "the given program", &outcome)) return 1;
    std::printf("fuzz_ops: the engines agree on the program's %zu events\n", outcome.events.size());
    return 0;
  }
  fuzzer.corpus = tandem::fuzz::read_corpus(options.corpus);
  std::atomic<bool> done{false};
  std::thread watchdog(watch, options.call_limit_ms, std::cref(done));
  tandem::fuzz::print_run("fuzz_ops", options, fuzzer.corpus.size());
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<std::int64_t>(options.seconds * 1000));
  std::int64_t iteration = options.only >= 0 ? options.only : 0;
  int status = 0;
  for (;; ++iteration) {
    if (options.only >= 0 && iteration > options.only) break;
    const bool replaying = static_cast<std::size_t>(iteration) < fuzzer.corpus.size();
    if (options.only < 0 && options.iterations >= 0 && iteration >= options.iterations) break;
    // The corpus is replayed whole, whatever the budget.
    if (options.only < 0 && options.iterations < 0 && !replaying &&
        std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    std::string origin;
    const Bytes bytes = fuzzer.input(iteration, origin);
    if (options.print) {
      std::printf("// iteration %lld: %s\n%s\n", static_cast<long long>(iteration), origin.c_str(),
                  tandem::fuzz::to_text(tandem::fuzz::decode(bytes)).c_str());
      continue;
    }
    const std::string label =
        "iteration " + std::to_string(iteration) + ", " + origin + " (reproduce: --seed " +
        std::to_string(options.seed) + " --only " + std::to_string(iteration) +
        (options.corpus == TANDEM_FUZZ_OPS_CORPUS ? "" : " --corpus " + options.corpus) + ")";
    Outcome outcome;
    if (!fuzzer.check(bytes, label, &outcome)) {
      status = 1;
      ++iteration;
      break;
    }
    fuzzer.keep_if_new(bytes, outcome, replaying);
  }
  done.store(true);
  watchdog.join();
  std::printf(
      "fuzz_ops: %lld programs: %zu ops gave an array or nothing, %zu reads, %zu errors at the "
      "call, "
      "%zu at a sync point; %zu features%s\n",
      static_cast<long long>(iteration), fuzzer.oks, fuzzer.values, fuzzer.call_errors,
      fuzzer.sync_errors, fuzzer.features.size(),
      options.write_corpus.empty()
          ? ""
          : (", " + std::to_string(fuzzer.written) + " entries written to " + options.write_corpus)
                .c_str());
  if (options.show_features) {
    for (const std::string& feature : fuzzer.features.all()) {
      std::printf("feature: %s\n", feature.c_str());
    }
  }
  std::printf("fuzz_ops: %s after %lld iterations (reproduce: --seed %llu --iterations %lld)\n",
              status == 0 ? "passed" : "FAILED", static_cast<long long>(iteration),
              static_cast<unsigned long long>(options.seed), static_cast<long long>(iteration));
  return status;
}
