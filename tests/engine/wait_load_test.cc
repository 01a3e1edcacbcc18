// Waits under load: eight threads keep pushing slow ops into an engine whose in-flight bound is
// full (so they block in push, and the workers are never idle), while the test waits on a
// stuck op. The waits' timeouts must still fire on time and name what they wait for, the
// wait_warn_after watchdog (TANDEM_WAIT_WARN_S) must still report the stuck op, and a wait from
// inside an op must still throw DeadlockError rather than hang.
//
// On time means: never early, and late by at most kLateness. A timed wait sleeps until its
// deadline (a condition variable, or a var's wake signal), then builds its report under the
// var's lock. What makes it late is the scheduler: the waiting thread shares two cores with 8
// pushers, 2 workers, a priority lane and, on a build machine, other jobs. 250 ms (1 s under a
// sanitizer) is far above the lateness seen here (the test prints the largest), and far below
// what a wait that missed its deadline and waited for the stuck op would show: forever.
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "test_support.h"

namespace {

using tandem::Completion;
using tandem::cpu;
using tandem::EngineKind;
using tandem::RunContext;
using tandem::TimeoutError;
using tandem::Var;
using namespace tandem_test;
using Clock = std::chrono::steady_clock;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr std::chrono::milliseconds kLateness = 1s;
#else
constexpr std::chrono::milliseconds kLateness = 250ms;
#endif

constexpr int kPushers = 8;
constexpr std::size_t kBound = 64;  // EngineConfig::max_ops_in_flight

tandem::EngineConfig loaded_config(
    tandem::EngineConfig config = test_config(EngineKind::threaded)) {
  config.kind = EngineKind::threaded;
  config.cpu_workers = 2;
  config.priority_workers = 1;
  config.max_ops_in_flight = kBound;
  return config;
}

// Eight threads, each pushing ops of about 1 ms on a var of its own (and reading a shared one)
// until stopped: the bound fills within milliseconds, and from then on every push blocks until
// ops finish.
class PushLoad {
 public:
  explicit PushLoad(TestEngine& engine) : engine_(engine) {
    const Var shared = engine.var();
    for (int t = 0; t < kPushers; ++t) {
      const Var own = engine.var();
      threads_.emplace_back([this, shared, own] {
        while (!stopping_.load()) {
          engine_->push([] { std::this_thread::sleep_for(1ms); }, cpu(), {shared}, {own},
                        {.name = "slow op"});
          pushed_.fetch_add(1);
        }
      });
    }
  }
  ~PushLoad() { stop(); }
  PushLoad(const PushLoad&) = delete;
  PushLoad& operator=(const PushLoad&) = delete;

  // Returns once the bound is full and pushes block on it.
  void wait_until_full() {
    const auto deadline = Clock::now() + kPatience;
    while (engine_->stats().pushes_blocked < 2 * kPushers) {
      REQUIRE(Clock::now() < deadline);
      std::this_thread::sleep_for(1ms);
    }
  }
  void stop() {
    stopping_.store(true);
    for (auto& thread : threads_) thread.join();
    threads_.clear();
  }

 private:
  TestEngine& engine_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> pushed_{0};
  std::vector<std::thread> threads_;
};

// An async op named "stuck op" writing `v`, whose Completion the test holds; returns once it
// has started (it runs behind the load's ops).
class StuckOp {
 public:
  StuckOp(tandem::Engine& engine, Var v) {
    engine.push(
        [this](RunContext& ctx) {
          std::lock_guard lock(mutex_);
          held_ = ctx.take_completion();
        },
        cpu(), {}, {v}, {.name = "stuck op", .async_completion = true});
    const auto deadline = Clock::now() + kPatience;
    while (!started()) {
      REQUIRE(Clock::now() < deadline);
      std::this_thread::sleep_for(1ms);
    }
  }
  ~StuckOp() { complete(); }
  StuckOp(const StuckOp&) = delete;
  StuckOp& operator=(const StuckOp&) = delete;

  bool started() {
    std::lock_guard lock(mutex_);
    return held_.pending();
  }
  void complete() {
    std::lock_guard lock(mutex_);
    if (held_.pending()) held_();
  }

 private:
  std::mutex mutex_;
  Completion held_;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs `wait`, which must throw TimeoutError after `timeout`: checks that it was neither early
// nor later than kLateness, and returns its message. `lateness` keeps the largest seen.
template <class Wait>
std::string timed_out(std::chrono::milliseconds timeout, Wait&& wait,
                      std::chrono::milliseconds& lateness) {
  const auto start = Clock::now();
  std::string message;
  bool threw = false;
  try {
    wait(timeout);
  } catch (const TimeoutError& error) {
    threw = true;
    message = error.what();
  }
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  CAPTURE(message);
  CHECK(threw);
  CHECK(waited >= timeout);
  CHECK(waited <= timeout + kLateness);
  lateness = std::max(lateness, waited - timeout);
  return message;
}

}  // namespace

TEST_CASE("under a full bound and eight pushers, timed waits fire on time and name the stuck op") {
  TestEngine engine(loaded_config());
  Watchdog watchdog("timed waits under load");
  PushLoad load(engine);
  load.wait_until_full();
  Var stuck = engine.var(), after = engine.var(), blocked = engine.var();
  StuckOp stuck_op(*engine, stuck);
  engine->push([] {}, cpu(), {stuck}, {after}, {.name = "reads stuck"});
  // A second stuck op, this one blocking its worker inside its body (not async).
  BlockingOp in_body(*engine, "stuck in its body", {}, {blocked});

  std::chrono::milliseconds lateness{0};
  for (const auto timeout : {20ms, 100ms, 300ms}) {
    CAPTURE(timeout.count());
    const std::string on_after = timed_out(
        timeout, [&](auto t) { engine->wait_for_var(after, t); }, lateness);
    CHECK(contains(on_after, "wait_for_var timed out after"));
    CHECK(contains(on_after, "'reads stuck'"));
    CHECK(contains(on_after, "'stuck op'"));
    CHECK(contains(on_after, "waits for its Completion"));

    const std::string on_stuck = timed_out(
        timeout, [&](auto t) { engine->wait_to_write(stuck, t); }, lateness);
    CHECK(contains(on_stuck, "wait_to_write timed out after"));
    CHECK(contains(on_stuck, "'stuck op'"));

    const std::string on_blocked = timed_out(
        timeout, [&](auto t) { engine->wait_for_var(blocked, t); }, lateness);
    CHECK(contains(on_blocked, "'stuck in its body'"));
    CAPTURE(on_blocked);
    CHECK(contains(on_blocked, "it is running"));

    const std::string on_all = timed_out(
        timeout, [&](auto t) { engine->wait_all(t); }, lateness);
    CHECK(contains(on_all, "wait_all timed out after"));
    CHECK(contains(on_all, "have not finished"));
    CHECK(contains(on_all, "'stuck op'"));
  }
  MESSAGE("largest lateness of a timed-out wait under load: ", lateness.count(), " ms");
  CHECK(engine->stats().pushes_blocked >= 2 * kPushers);

  // The waits cancelled nothing: once the stuck ops end, everything finishes.
  stuck_op.complete();
  in_body.release();
  load.stop();
  CHECK_NOTHROW(engine->wait_for_var(after, kPatience));
  CHECK_NOTHROW(engine->wait_all(kPatience));
}

TEST_CASE("under load, TANDEM_WAIT_WARN_S reports name the stuck op, on time and repeatedly") {
  tandem::EngineConfig config;
  {
    ScopedEnv warn("TANDEM_WAIT_WARN_S", "1");
    config = loaded_config(tandem::EngineConfig::from_env());
  }
  REQUIRE(config.wait_warn_after == 1s);
  // Whatever TANDEM_LOG_LEVEL says: a wait_all whose ops keep finishing (the load's, pushed
  // before it) reports at info level, a stuck one warns.
  config.log_level = "info";
  TestEngine engine(config);
  Watchdog watchdog("waits reported under load");
  auto captured = std::make_shared<std::ostringstream>();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*captured);
  tandem::detail::log().sinks().push_back(sink);
  struct SinkRemover {
    std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink;
    ~SinkRemover() {
      auto& sinks = tandem::detail::log().sinks();
      sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
    }
  } remover{sink};

  PushLoad load(engine);
  load.wait_until_full();
  Var stuck = engine.var(), after = engine.var();
  StuckOp stuck_op(*engine, stuck);
  engine->push([] {}, cpu(), {stuck}, {after}, {.name = "reads stuck"});
  // Two waits without a timeout, on two threads: they block until the stuck op completes, and
  // the watchdog reports each every second meanwhile.
  std::atomic<int> returned{0};
  std::thread var_waiter([&] {
    engine->wait_for_var(after);
    returned.fetch_add(1);
  });
  std::thread all_waiter([&] {
    engine->wait_all();
    returned.fetch_add(1);
  });
  std::this_thread::sleep_for(2500ms);
  CHECK(returned.load() == 0);
  stuck_op.complete();
  var_waiter.join();
  all_waiter.join();
  CHECK(returned.load() == 2);
  load.stop();

  sink->flush();
  const std::string log = captured->str();
  CAPTURE(log);
  // Each wait was reported at least twice (after 1 s and 2 s), naming the stuck op.
  // (A line scan, not std::regex: GCC 12 warns inside <regex> under the sanitizers, -Werror.)
  struct Report {
    // What the line starts with, then the milliseconds: the warning, or (wait_all only) the
    // info line of a wait whose ops finished since the last report.
    std::vector<const char*> prefixes;
    std::vector<const char*> must_name;  // what the rest of the line names, in order
  };
  const Report var_report{{"wait_for_var still blocked after "}, {"'reads stuck'", "'stuck op'"}};
  const Report all_report{{"wait_all still blocked after ", "wait_all still waiting after "},
                          {"'stuck op'"}};
  for (const Report* report : {&var_report, &all_report}) {
    std::vector<long> after_ms;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      std::size_t at = std::string::npos, from = 0;
      for (const char* prefix : report->prefixes) {
        if ((at = line.find(prefix)) != std::string::npos) {
          from = at + std::strlen(prefix);
          break;
        }
      }
      if (at == std::string::npos) continue;
      const std::size_t digits = line.find_first_not_of("0123456789", from);
      if (digits == from ||
          (line.compare(digits, 4, " ms:") != 0 && line.compare(digits, 4, " ms,") != 0)) {
        continue;
      }
      bool names_all = true;
      std::size_t search = digits;
      for (const char* name : report->must_name) {
        search = line.find(name, search);
        if (search == std::string::npos) {
          names_all = false;
          break;
        }
      }
      if (names_all) after_ms.push_back(std::stol(line.substr(from, digits - from)));
    }
    REQUIRE(after_ms.size() >= 2);
    // The first report comes on time: after wait_warn_after, late by at most kLateness.
    CHECK(after_ms[0] >= 1000);
    CHECK(after_ms[0] <= 1000 + kLateness.count());
    CHECK(after_ms[1] >= 2000);
  }
}

TEST_CASE("under a full bound and eight pushers, a wait from inside an op throws DeadlockError") {
  TestEngine engine(loaded_config());
  Watchdog watchdog("waits from inside ops under load");
  PushLoad load(engine);
  load.wait_until_full();
  Var own = engine.var(), later = engine.var();
  tandem::Engine& e = *engine;
  struct Outcome {
    std::atomic<int> deadlock_errors{0};
    std::mutex mutex;
    std::vector<std::string> messages;
    void add(const std::string& message) {
      std::lock_guard lock(mutex);
      messages.push_back(message);
    }
  } outcome;
  auto attempt = [&outcome](auto&& wait) {
    try {
      wait();
    } catch (const tandem::DeadlockError& error) {
      outcome.deadlock_errors.fetch_add(1);
      outcome.add(error.what());
    } catch (const std::exception& error) {
      outcome.add(std::string("not a DeadlockError: ") + error.what());
    }
  };
  // Each of these waits, made inside the op, could only end after the op itself: its own
  // output, a var that only an op pushed after it writes, everything pushed before the wait.
  engine->push(
      [&] {
        attempt([&] { e.wait_to_write(own); });
        e.push([] {}, cpu(), {}, {later}, {.name = "pushed later"});  // no block inside an op
        attempt([&] { e.wait_for_var(later); });
        attempt([&] { e.wait_all(); });
      },
      cpu(), {}, {own}, {.name = "waits inside"});
  engine->push([&] { attempt([&] { e.wait_for_var(own); }); }, cpu(), {}, {},
               {.name = "urgent waits inside", .priority = 1});
  CHECK_NOTHROW(engine->wait_for_var(own, kPatience));
  CHECK_NOTHROW(engine->wait_for_var(later, kPatience));
  load.stop();
  CHECK_NOTHROW(engine->wait_all(kPatience));
  std::lock_guard lock(outcome.mutex);
  CAPTURE(outcome.messages.size());
  CHECK(outcome.deadlock_errors.load() == 4);
  for (const std::string& message : outcome.messages) {
    CAPTURE(message);
    CHECK(contains(message, "called from inside op '"));
    CHECK((contains(message, "'waits inside'") || contains(message, "'urgent waits inside'")));
  }
}
