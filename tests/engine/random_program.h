// The random programs of the differential test (differential_test.cc) and the model of the
// engine's error rules that the generator runs while it writes them.
//
// A program has one list of ops per pushing thread. Each thread writes only its own group of
// vars and reads its group plus a few shared vars, written once (by the main thread) before the
// threads start; so each thread's program means the same however the threads interleave.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <tandem/engine.h>

namespace tandem_test::differential {

inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(mix(seed)) {}
  std::uint64_t next() { return state_ = mix(state_); }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  T pick(std::initializer_list<T> choices) {
    return choices.begin()[below(static_cast<int>(choices.size()))];
  }

 private:
  std::uint64_t state_;
};

// How an op ends: its body returns, or it completes asynchronously (in its body, or later on
// another thread).
enum class Ending : std::uint8_t { returns, completes_in_body, completes_on_thread };

struct OpSpec {
  std::uint64_t id = 0;  // unique in the program: seeds the values the op writes
  std::string name;      // unique in the program; outlives the engine, as OpProps::name requires
  std::vector<int> reads;
  std::vector<int> writes;
  int priority = 0;
  bool no_skip = false;
  int fail_after = -1;  // -1: succeeds; k >= 0: writes its first k outputs, then fails
  Ending ending = Ending::returns;
  int wait_var = -1;  // a sync point right after this push: wait on this var (-1: none)
  bool wait_to_write = false;
};

inline std::string failure_message(const OpSpec& op) {
  return "injected failure of " + op.name;
}

// The failure message of op `index` of `program`, which may be `current` (not stored yet).
inline std::string failure_message(const std::vector<OpSpec>& program, int index,
                                   const OpSpec& current) {
  const auto i = static_cast<std::size_t>(index);
  return failure_message(i < program.size() ? program[i] : current);
}

inline constexpr int kClean = std::numeric_limits<int>::max();  // model: a var no error poisons

struct Program {
  std::uint64_t seed = 0;
  int shared_vars = 0;  // vars [0, shared_vars): written by the main thread, then only read
  int vars_per_thread = 0;
  std::vector<std::vector<OpSpec>> threads;
  tandem::EngineConfig threaded_config;
  // The model's error reports: the original message ("" for none) of each var's poison, of
  // each intermediate wait, and the set that wait_all reports.
  std::vector<std::string> expected_var_errors;
  std::vector<std::vector<std::string>> expected_waits;
  std::vector<std::string> expected_wait_all;  // sorted
  // What wait_all reports of each thread's failures, in that thread's push order: wait_all
  // throws errors in push order, and each thread's pushes are ordered (threads interleave).
  std::vector<std::vector<std::string>> expected_wait_all_by_thread;

  int total_vars() const {
    return shared_vars + vars_per_thread * static_cast<int>(threads.size());
  }
  int first_var(int thread) const { return shared_vars + thread * vars_per_thread; }
};

inline OpSpec random_op(Random& rng, const Program& p, int thread) {
  OpSpec op;
  auto own = [&] { return p.first_var(thread) + rng.below(p.vars_per_thread); };
  for (int i = rng.below(4); i > 0; --i) {
    op.reads.push_back(rng.chance(0.3) ? rng.below(p.shared_vars) : own());
  }
  if (rng.chance(0.02)) {
    for (int i = 0; i < 6; ++i) op.reads.push_back(own());  // more vars than fit inline
  }
  const int num_writes = rng.chance(0.1) ? 0 : 1 + rng.below(3);
  for (int i = 0; i < num_writes; ++i) op.writes.push_back(own());
  auto any_of = [&](const std::vector<int>& vars) {
    return vars[static_cast<std::size_t>(rng.below(static_cast<int>(vars.size())))];
  };
  if (!op.reads.empty() && rng.chance(0.1)) op.reads.push_back(any_of(op.reads));
  if (!op.writes.empty() && rng.chance(0.1)) op.writes.push_back(any_of(op.writes));
  if (!op.writes.empty() && rng.chance(0.15)) op.reads.push_back(any_of(op.writes));
  op.priority = rng.pick({-1, 0, 0, 0, 0, 1, 2});
  op.no_skip = rng.chance(0.03);
  if (rng.chance(0.01)) op.fail_after = rng.below(static_cast<int>(op.writes.size()) + 1);
  const int ending = rng.below(100);
  op.ending = ending < 4   ? Ending::completes_in_body
              : ending < 8 ? Ending::completes_on_thread
                           : Ending::returns;
  return op;
}

// Writes a random program and, alongside, runs the model of the poison rules on it.
inline Program generate(std::uint64_t seed, int total_ops) {
  Random rng(seed);
  Program p;
  p.seed = seed;
  const int num_threads = 1 + rng.below(3);
  p.shared_vars = 4 + rng.below(5);
  p.vars_per_thread = 8 + rng.below(9);
  p.threads.resize(static_cast<std::size_t>(num_threads));
  p.expected_waits.resize(static_cast<std::size_t>(num_threads));

  tandem::EngineConfig& config = p.threaded_config;
  config.kind = tandem::EngineKind::threaded;
  config.cpu_workers = 1 + rng.below(3);
  config.priority_workers = rng.below(2);
  config.max_ops_in_flight = rng.pick<std::size_t>({0, 8, 64, 16384});
  config.spin_before_park = std::chrono::microseconds(rng.pick({0, 50}));

  // The model: for each var, the index (in its thread's program) of the failed op whose error
  // poisons it, or kClean.
  std::vector<int> poison(static_cast<std::size_t>(p.total_vars()), kClean);
  std::set<std::string> failed, thrown_by_waits;
  std::vector<std::vector<std::string>> failed_in_order(static_cast<std::size_t>(num_threads));
  for (int t = 0; t < num_threads; ++t) {
    const int ops = total_ops / num_threads;
    auto& program = p.threads[static_cast<std::size_t>(t)];
    for (int i = 0; i < ops; ++i) {
      OpSpec op = random_op(rng, p, t);
      op.id = (static_cast<std::uint64_t>(t) << 32) | static_cast<std::uint64_t>(i);
      // Appended piece by piece: `"t" + std::to_string(t)` trips GCC 12's -Wrestrict false
      // positive at -O3 (GCC bug 105329), and warnings are errors for our code.
      op.name = "t";
      op.name += std::to_string(t);
      op.name += ".op";
      op.name += std::to_string(i);
      // An op skipped because inputs are poisoned passes on the oldest of their errors: the
      // one of the failed op pushed first (all of them come from this thread's program).
      int oldest = kClean;
      for (int r : op.reads) oldest = std::min(oldest, poison[static_cast<std::size_t>(r)]);
      const bool skipped = !op.no_skip && oldest != kClean;
      int outcome = kClean;  // the failed op whose error this op leaves on its writes
      if (skipped) {
        outcome = oldest;
      } else if (op.fail_after >= 0) {
        outcome = i;
        failed.insert(failure_message(op));
        failed_in_order[static_cast<std::size_t>(t)].push_back(failure_message(op));
      }
      for (int w : op.writes) poison[static_cast<std::size_t>(w)] = outcome;
      if (rng.chance(0.004)) {
        op.wait_var = rng.chance(0.2) ? rng.below(p.shared_vars)
                                      : p.first_var(t) + rng.below(p.vars_per_thread);
        op.wait_to_write = rng.chance(0.5);
        const int seen = poison[static_cast<std::size_t>(op.wait_var)];
        const std::string message = seen == kClean ? "" : failure_message(program, seen, op);
        p.expected_waits[static_cast<std::size_t>(t)].push_back(message);
        if (!message.empty()) thrown_by_waits.insert(message);
      }
      program.push_back(std::move(op));
    }
  }
  for (std::size_t v = 0; v < poison.size(); ++v) {
    const int origin = poison[v];
    // Var v belongs to one thread's group; its poison comes from that thread's program.
    const int owner = static_cast<int>(v) < p.shared_vars
                          ? -1
                          : (static_cast<int>(v) - p.shared_vars) / p.vars_per_thread;
    p.expected_var_errors.push_back(
        origin == kClean
            ? ""
            : failure_message(
                  p.threads[static_cast<std::size_t>(owner)][static_cast<std::size_t>(origin)]));
  }
  std::set_difference(failed.begin(), failed.end(), thrown_by_waits.begin(), thrown_by_waits.end(),
                      std::back_inserter(p.expected_wait_all));
  for (auto& in_order : failed_in_order) {
    std::erase_if(in_order, [&](const std::string& m) { return thrown_by_waits.count(m) > 0; });
    p.expected_wait_all_by_thread.push_back(std::move(in_order));
  }
  return p;
}

}  // namespace tandem_test::differential
