// Waits that say what they wait for: a timeout on every wait (TimeoutError with a description of
// what blocks it), and the watchdog (EngineConfig::wait_warn_after) that logs the same
// description while a wait goes on. The blocker here is the classic hang: an async op whose
// Completion is never invoked.
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

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

// Pushes an async op named `name` writing `v` that hands its Completion to `held`.
void push_held(tandem::Engine& engine, Var v, Completion& held, std::mutex& mutex,
               const char* name) {
  engine.push(
      [&held, &mutex](RunContext& ctx) {
        std::lock_guard lock(mutex);
        held = ctx.take_completion();
      },
      cpu(), {}, {v}, {.name = name, .async_completion = true});
}

template <class Condition>
bool eventually_true(Condition&& condition) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// What the engine logs while it lives, at `level` or above (the level is restored after).
class CapturedLog {
 public:
  explicit CapturedLog(spdlog::level::level_enum level)
      : level_before_(tandem::detail::log().level()) {
    tandem::detail::log().set_level(level);
    tandem::detail::log().sinks().push_back(sink_);
  }
  ~CapturedLog() {
    auto& sinks = tandem::detail::log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    tandem::detail::log().set_level(level_before_);
  }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  // The text logged since the last take().
  std::string take() {
    std::string text = text_->str();
    text_->str("");
    return text;
  }

 private:
  const spdlog::level::level_enum level_before_;
  std::shared_ptr<std::ostringstream> text_ = std::make_shared<std::ostringstream>();
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ostream_sink_mt>(*text_);
};

// Invokes `held` `delay` after its op started (not after it was pushed: on a loaded machine the
// op may start late), on a thread of its own; join() the thread returned.
std::thread complete_after(Completion& held, std::mutex& mutex, std::chrono::milliseconds delay) {
  return std::thread([&held, &mutex, delay] {
    const bool started = eventually_true([&] {
      std::lock_guard lock(mutex);
      return held.pending();
    });
    std::this_thread::sleep_for(delay);
    std::lock_guard lock(mutex);
    if (started) held();
  });
}

}  // namespace

TEST_CASE("waits with a timeout throw TimeoutError naming the op that never completes") {
  auto engine = make_engine(EngineKind::threaded);
  Var v = engine.var(), w = engine.var();
  std::mutex mutex;
  Completion held;
  push_held(*engine, v, held, mutex, "never completes");
  engine->push([] {}, cpu(), {v}, {w}, {.name = "reads v"});
  // The reports below describe an op that waits for its Completion: let it start first (on a
  // loaded machine a worker may take longer than the waits' timeouts to run it, and a test that
  // gave up then would leave an op in flight that nobody completes).
  REQUIRE(eventually_true([&] {
    std::lock_guard lock(mutex);
    return held.pending();
  }));

  // w's writer waits for v, which the async op holds: the report follows that chain.
  const std::string on_w = error_of([&] { engine->wait_for_var(w, 100ms); });
  CHECK(contains(on_w, "wait_for_var timed out after"));
  CHECK(contains(on_w, "'reads v'"));
  CHECK(contains(on_w, "'never completes'"));
  CHECK(contains(on_w, "waits for its Completion"));
  CHECK_THROWS_AS(engine->wait_for_var(w, 10ms), TimeoutError);
  CHECK_THROWS_AS(engine->wait_to_write(v, 10ms), TimeoutError);

  const std::string on_all = error_of([&] { engine->wait_all(100ms); });
  CHECK(contains(on_all, "wait_all timed out after"));
  CHECK(contains(on_all, "2 op(s) pushed before it have not finished"));
  CHECK(contains(on_all, "'never completes'"));
  // A timed-out wait cancels nothing: once the completion comes, everything finishes.
  {
    std::lock_guard lock(mutex);
    REQUIRE(held.pending());
    held();
  }
  CHECK_NOTHROW(engine->wait_for_var(w, 10s));
  CHECK_NOTHROW(engine->wait_all(10s));
  CHECK_NOTHROW(engine->wait_all());
  CHECK(engine->stats().ops_in_flight == 0);
}

TEST_CASE("a wait that finishes in time returns normally and rethrows op errors") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  engine->push([] { throw std::runtime_error("boom"); }, cpu(), {}, {v}, {.name = "fails"});
  CHECK_THROWS_WITH(engine->wait_for_var(v, 10s), doctest::Contains("boom"));
  CHECK_NOTHROW(engine->wait_all(10s));
}

TEST_CASE("the naive engine's waits time out while another thread's op waits for its Completion") {
  auto engine = make_engine(EngineKind::naive);
  Var v = engine.var();
  std::mutex mutex;
  Completion held;
  std::atomic<bool> pushed{false};
  // The naive engine runs the op inside push, which returns once the op completes.
  std::thread pusher([&] {
    push_held(*engine, v, held, mutex, "never completes");
    pushed = true;
  });
  CHECK(eventually_true([&] {
    std::lock_guard lock(mutex);
    return held.pending();
  }));
  const std::string error = error_of([&] { engine->wait_for_var(v, 100ms); });
  CHECK(contains(error, "wait_for_var timed out"));
  CHECK(contains(error, "waits for an async op's Completion"));
  CHECK_THROWS_AS(engine->wait_all(50ms), TimeoutError);
  {
    std::lock_guard lock(mutex);
    held();
  }
  pusher.join();
  CHECK(pushed.load());
  CHECK_NOTHROW(engine->wait_all(10s));
}

TEST_CASE("the watchdog logs what a long wait is blocked on, and the wait goes on") {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.wait_warn_after = 50ms;
  TestEngine engine(config);
  CapturedLog captured(spdlog::level::warn);
  Var v = engine.var();
  std::mutex mutex;
  Completion held;
  push_held(*engine, v, held, mutex, "slow to complete");
  // 300 ms after the op started, so that the 50 ms watchdog sees it waiting for its Completion.
  std::thread completer = complete_after(held, mutex, 300ms);
  CHECK_NOTHROW(engine->wait_for_var(v));  // no timeout: it waits until the completion
  completer.join();
  const std::string log = captured.take();
  CHECK(contains(log, "wait_for_var still blocked after"));
  CHECK(contains(log, "'slow to complete'"));
  CHECK(contains(log, "waits for its Completion"));
}

TEST_CASE("the watchdog tells a long wait_all that advances from one that is stuck") {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.wait_warn_after = 200ms;
  TestEngine engine(config);
  CapturedLog captured(spdlog::level::info);
  // A chain of 60 ops of 10 ms: wait_all lasts ~600 ms, and every 200 ms some ops have ended.
  Var v = engine.var();
  for (int i = 0; i < 60; ++i)
    engine->push([] { std::this_thread::sleep_for(10ms); }, cpu(), {}, {v}, {.name = "step"});
  CHECK_NOTHROW(engine->wait_all());
  const std::string advancing = captured.take();
  // An op whose Completion comes after 500 ms: nothing ends meanwhile.
  std::mutex mutex;
  Completion held;
  push_held(*engine, v, held, mutex, "stuck for a while");
  std::thread completer = complete_after(held, mutex, 500ms);
  CHECK_NOTHROW(engine->wait_all());
  completer.join();
  const std::string stuck = captured.take();
  CHECK(contains(advancing, "wait_all still waiting after"));
  CHECK(contains(advancing, "op(s) finished in the last"));
  CHECK_FALSE(contains(advancing, "still blocked"));
  CHECK(contains(stuck, "wait_all still blocked after"));
  CHECK(contains(stuck, "'stuck for a while'"));
}
