// Randomized differential test: random programs run on the threaded engine, pushed from several
// threads at once, and on the naive engine, one thread's program after the other. Both must
// leave the same var contents and report the same errors, and the errors must match a model of
// the poison rules that the generator keeps while it writes the program (random_program.h).
//
// Each pushing thread writes only its own group of vars and reads its group plus a few shared
// vars that the main thread writes once before the threads start. So every thread's program has
// one sequential meaning however the threads interleave, and cross-thread read sharing is still
// exercised.
//
//   TANDEM_TEST_SCALE=0.05   run 5% of the programs (sanitizer builds)
//   TANDEM_TEST_SEED=17      replay one program (every mismatch prints its seed)
#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "random_program.h"
#include "test_support.h"

namespace {

using tandem::cpu;
using tandem::EngineKind;
using tandem::Var;
using namespace tandem_test;
using namespace tandem_test::differential;

constexpr std::uint64_t kFirstSeed = 1;
constexpr int kPrograms = 200;
constexpr int kOpsPerProgram = 5000;

std::optional<std::uint64_t> replay_seed() {
  const char* text = std::getenv("TANDEM_TEST_SEED");
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  const unsigned long long seed = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') FAIL("TANDEM_TEST_SEED='" << text << "' is not a seed");
  return seed;
}

// Invokes the completions that op bodies hand over, on its own thread, in order.
class Completer {
 public:
  Completer() : thread_([this] { serve(); }) {}
  ~Completer() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_one();
    thread_.join();
  }
  // `failure` empty: succeed; otherwise fail with that message.
  void post(tandem::Completion done, std::string failure) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({std::move(done), std::move(failure)});
    }
    changed_.notify_one();
  }

 private:
  struct Item {
    tandem::Completion done;
    std::string failure;
  };
  void serve() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Item item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      if (item.failure.empty()) {
        item.done();
      } else {
        item.done.fail(std::make_exception_ptr(std::runtime_error(item.failure)));
      }
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

// The op's work: its written values are a hash of its id and of every value it reads.
struct OpBody {
  const OpSpec* op;
  std::int64_t* values;
  Completer* completer;

  void operator()(tandem::RunContext& ctx) const {
    std::uint64_t h = mix(op->id);
    for (int r : op->reads) h = mix(h ^ static_cast<std::uint64_t>(values[r]));
    int written = 0;
    for (int w : op->writes) {
      if (written == op->fail_after) break;
      values[w] = static_cast<std::int64_t>(mix(h + static_cast<std::uint64_t>(written)));
      ++written;
    }
    const bool fails = op->fail_after >= 0;
    switch (op->ending) {
      case Ending::returns:
        if (fails) throw std::runtime_error(failure_message(*op));
        return;
      case Ending::completes_in_body: {
        tandem::Completion done = ctx.take_completion();
        if (fails) {
          done.fail(std::make_exception_ptr(std::runtime_error(failure_message(*op))));
        } else {
          done();
        }
        return;
      }
      case Ending::completes_on_thread:
        completer->post(ctx.take_completion(), fails ? failure_message(*op) : std::string());
        return;
    }
  }
};

// What a sync point threw: the OpError's message and its original's, or two empty strings.
struct Report {
  std::string what;
  std::string origin;
  friend bool operator==(const Report&, const Report&) = default;
};

template <class Fn>
Report report_of(Fn&& fn) {
  try {
    fn();
  } catch (const tandem::OpError& error) {
    return {error.what(), nested_message(error)};
  } catch (const std::exception& error) {
    return {std::string("not an OpError: ") + error.what(), "?"};
  }
  return {};
}

struct Outcome {
  std::vector<std::int64_t> values;
  std::vector<Report> var_errors;
  std::vector<Report> wait_all_errors;  // in the order wait_all threw them
  bool wait_all_kept_throwing = false;
  std::vector<std::vector<Report>> waits;  // per thread, per intermediate wait
  tandem::EngineStats stats;
};

class ProgramRun {
 public:
  ProgramRun(const Program& p, tandem::Engine& engine, Outcome& out)
      : p_(p), engine_(engine), out_(out) {
    for (int i = 0; i < p.total_vars(); ++i) vars_.push_back(engine.new_var());
  }

  void initialise() {
    for (int i = 0; i < p_.total_vars(); ++i) {
      engine_.push([values = out_.values.data(), i,
                    seed = p_.seed] { values[i] = static_cast<std::int64_t>(mix(seed ^ mix(i))); },
                   cpu(), {}, {vars_[static_cast<std::size_t>(i)]}, {.name = "init"});
    }
  }

  void run_thread(int t) {
    std::vector<Report>& waits = out_.waits[static_cast<std::size_t>(t)];
    for (const OpSpec& op : p_.threads[static_cast<std::size_t>(t)]) {
      push(op);
      if (op.wait_var < 0) continue;
      const Var v = vars_[static_cast<std::size_t>(op.wait_var)];
      waits.push_back(report_of([&] {
        if (op.wait_to_write) {
          engine_.wait_to_write(v);
        } else {
          engine_.wait_for_var(v);
        }
      }));
    }
  }

  void collect_errors() {
    // Each error once, then silence; a bound catches an engine that keeps throwing.
    const std::size_t bound = p_.expected_wait_all.size() + 10;
    for (;;) {
      Report report = report_of([&] { engine_.wait_all(); });
      if (report.what.empty()) break;
      out_.wait_all_errors.push_back(std::move(report));
      if (out_.wait_all_errors.size() > bound) {
        out_.wait_all_kept_throwing = true;
        break;
      }
    }
    for (Var v : vars_) out_.var_errors.push_back(report_of([&] { engine_.wait_for_var(v); }));
    out_.stats = engine_.stats();
    for (Var v : vars_) engine_.delete_var(v);
    engine_.wait_all();
  }

 private:
  void push(const OpSpec& op) {
    std::array<Var, 32> reads, writes;
    std::size_t num_reads = 0, num_writes = 0;
    for (int r : op.reads) reads.at(num_reads++) = vars_[static_cast<std::size_t>(r)];
    for (int w : op.writes) writes.at(num_writes++) = vars_[static_cast<std::size_t>(w)];
    engine_.push(OpBody{&op, out_.values.data(), &completer_}, cpu(),
                 std::span<const Var>(reads.data(), num_reads),
                 std::span<const Var>(writes.data(), num_writes),
                 {.name = op.name.c_str(),
                  .priority = op.priority,
                  .async_completion = op.ending != Ending::returns,
                  .no_skip = op.no_skip});
  }

  const Program& p_;
  tandem::Engine& engine_;
  Outcome& out_;
  std::vector<Var> vars_;
  Completer completer_;
};

// Runs `p` on an engine made from `config`: the threads' programs at once on their own
// threads, or one after the other on this thread.
Outcome run(const Program& p, const tandem::EngineConfig& config, bool concurrently) {
  Outcome out;
  out.values.assign(static_cast<std::size_t>(p.total_vars()), 0);
  out.waits.resize(p.threads.size());
  auto engine = tandem::Engine::create(config);
  {
    ProgramRun program(p, *engine, out);
    program.initialise();
    const int num_threads = static_cast<int>(p.threads.size());
    if (concurrently) {
      std::vector<std::thread> pushers;
      for (int t = 0; t < num_threads; ++t)
        pushers.emplace_back([&program, t] { program.run_thread(t); });
      for (auto& thread : pushers) thread.join();
    } else {
      for (int t = 0; t < num_threads; ++t) program.run_thread(t);
    }
    program.collect_errors();
  }  // every op has finished: collect_errors waited for all of them
  return out;
}

// "" when equal, else where they first differ.
template <class T, class Show>
std::string first_difference(const std::vector<T>& a, const std::vector<T>& b, Show show) {
  if (a.size() != b.size()) {
    return "sizes differ: " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i])) return "[" + std::to_string(i) + "] " + show(a[i]) + " vs " + show(b[i]);
  }
  return "";
}

std::string show_value(std::int64_t v) {
  return std::to_string(v);
}
std::string show_text(const std::string& s) {
  return "'" + s + "'";
}
std::string show_report(const Report& r) {
  return "'" + r.what + "'";
}

std::vector<std::string> origins(const std::vector<Report>& reports) {
  std::vector<std::string> result;
  for (const Report& r : reports) result.push_back(r.origin);
  return result;
}

std::vector<std::string> sorted_whats(const std::vector<Report>& reports) {
  std::vector<std::string> result;
  for (const Report& r : reports) result.push_back(r.what);
  std::sort(result.begin(), result.end());
  return result;
}

bool has_duplicates(std::vector<std::string> sorted) {
  return std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
}

void check_against_model(const Program& p, const Outcome& out, const char* engine) {
  INFO(std::string(engine) << " engine against the model");
  CHECK_FALSE(out.wait_all_kept_throwing);
  CHECK(first_difference(origins(out.var_errors), p.expected_var_errors, show_text) == "");
  std::vector<std::string> wait_all = origins(out.wait_all_errors);
  // Push order within each thread (wait_all throws in push order; threads interleave).
  for (std::size_t t = 0; t < p.threads.size(); ++t) {
    CAPTURE(t);
    const std::string prefix = "injected failure of t" + std::to_string(t) + ".";
    std::vector<std::string> of_thread;
    for (const std::string& origin : wait_all) {
      if (origin.starts_with(prefix)) of_thread.push_back(origin);
    }
    CHECK(first_difference(of_thread, p.expected_wait_all_by_thread[t], show_text) == "");
  }
  std::sort(wait_all.begin(), wait_all.end());
  CHECK(first_difference(wait_all, p.expected_wait_all, show_text) == "");
  CHECK_FALSE(has_duplicates(sorted_whats(out.wait_all_errors)));
  for (std::size_t t = 0; t < p.threads.size(); ++t) {
    CAPTURE(t);
    CHECK(first_difference(origins(out.waits[t]), p.expected_waits[t], show_text) == "");
  }
}

void compare(const Program& p, const Outcome& threaded, const Outcome& naive) {
  CHECK(first_difference(threaded.values, naive.values, show_value) == "");
  CHECK(first_difference(threaded.var_errors, naive.var_errors, show_report) == "");
  // As sets: the naive engine runs one thread's program after the other, the threaded one
  // interleaves them (the order within each thread is checked against the model).
  CHECK(first_difference(sorted_whats(threaded.wait_all_errors),
                         sorted_whats(naive.wait_all_errors), show_text) == "");
  if (p.threads.size() == 1) {
    CHECK(first_difference(threaded.wait_all_errors, naive.wait_all_errors, show_report) == "");
  }
  for (std::size_t t = 0; t < p.threads.size(); ++t) {
    CAPTURE(t);
    CHECK(first_difference(threaded.waits[t], naive.waits[t], show_report) == "");
  }
  CHECK(threaded.stats.ops_pushed == naive.stats.ops_pushed);
  CHECK(threaded.stats.ops_failed == naive.stats.ops_failed);
  CHECK(threaded.stats.ops_skipped == naive.stats.ops_skipped);
  CHECK(threaded.stats.ops_completed == threaded.stats.ops_pushed);
  CHECK(threaded.stats.ops_in_flight == 0);
  check_against_model(p, threaded, "threaded");
  check_against_model(p, naive, "naive");
}

}  // namespace

TEST_CASE("random programs give the same results and errors on the threaded and naive engines") {
  const double scale = test_scale();
  std::vector<std::uint64_t> seeds;
  if (const std::optional<std::uint64_t> seed = replay_seed()) {
    seeds.push_back(*seed);
  } else {
    const int programs = std::max(1, static_cast<int>(kPrograms * scale + 0.5));
    for (int i = 0; i < programs; ++i) seeds.push_back(kFirstSeed + static_cast<std::uint64_t>(i));
  }

  tandem::EngineConfig naive_config;
  naive_config.kind = EngineKind::naive;
  std::uint64_t threaded_ops = 0, threaded_skipped = 0, threaded_failed = 0;
  for (std::uint64_t seed : seeds) {
    INFO("replay with TANDEM_TEST_SEED=" << seed);
    const Program p = generate(seed, kOpsPerProgram);
    Watchdog watchdog("differential program with TANDEM_TEST_SEED=" + std::to_string(seed),
                      std::chrono::minutes(1));
    const Outcome threaded = run(p, p.threaded_config, /*concurrently=*/true);
    const Outcome naive = run(p, naive_config, /*concurrently=*/false);
    compare(p, threaded, naive);
    threaded_ops += threaded.stats.ops_pushed;
    threaded_skipped += threaded.stats.ops_skipped;
    threaded_failed += threaded.stats.ops_failed;
  }
  MESSAGE("differential test: " << seeds.size() << " programs, " << threaded_ops
                                << " ops on the threaded engine (" << threaded_failed << " failed, "
                                << threaded_skipped << " skipped)");
  if (!replay_seed())
    CHECK(threaded_ops >= static_cast<std::uint64_t>(seeds.size()) * kOpsPerProgram * 9 / 10);
}
