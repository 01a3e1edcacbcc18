// Asynchronous completion: an op pushed with `async_completion` ends when its Completion is
// invoked (from any thread, before or after its body returns), not when its body returns.
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace {

using tandem::Completion;
using tandem::cpu;
using tandem::EngineKind;
using tandem::RunContext;
using tandem::Var;
using namespace tandem_test;

// Threads started by op bodies, joined by the test.
class Helpers {
 public:
  template <class Fn>
  void start(Fn&& fn) {
    std::lock_guard lock(mutex_);
    threads_.emplace_back(std::forward<Fn>(fn));
  }
  ~Helpers() {
    for (auto& thread : threads_) thread.join();
  }

 private:
  std::mutex mutex_;
  std::vector<std::thread> threads_;
};

}  // namespace

TEST_CASE("an async op holds its writes until its Completion is invoked") {
  auto engine = make_engine(EngineKind::threaded);
  Var v = engine.var();
  std::mutex mutex;
  Completion held;
  Flag body_returned;
  int value = 0;
  engine->push(
      [&](RunContext& ctx) {
        std::lock_guard lock(mutex);
        held = ctx.take_completion();
        value = 1;
        body_returned.raise();
      },
      cpu(), {}, {v}, {.name = "held", .async_completion = true});
  std::atomic<bool> reader_ran{false};
  std::atomic<int> reader_saw{0};
  engine->push(
      [&] {
        reader_saw.store(value);
        reader_ran.store(true);
      },
      cpu(), {v}, {});
  REQUIRE(body_returned.wait());
  std::this_thread::sleep_for(30ms);  // a chance for the reader to run too early
  CHECK_FALSE(reader_ran.load());
  CHECK(engine->stats().ops_in_flight == 2);

  std::thread completer([&] {
    std::lock_guard lock(mutex);
    value = 2;  // the async op's work, finished on another thread
    held();
  });
  engine->wait_for_var(v);
  completer.join();
  engine->wait_all();
  CHECK(reader_ran.load());
  CHECK(reader_saw.load() == 2);
}

TEST_CASE("a Completion invoked from another thread after the body returned completes the op") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Helpers helpers;
  Var v = engine.var();
  std::atomic<int> value{0};
  for (int i = 1; i <= 20; ++i) {
    engine->push(
        [&value, &helpers, i](RunContext& ctx) {
          helpers.start([&value, i, done = ctx.take_completion()]() mutable {
            std::this_thread::sleep_for(1ms);
            value.store(i);
            done();
          });
        },
        cpu(), {}, {v}, {.name = "io", .async_completion = true});
  }
  std::atomic<int> seen{0};
  engine->push([&] { seen.store(value.load()); }, cpu(), {v}, {});
  engine->wait_all();
  CHECK(seen.load() == 20);
  CHECK(engine->stats().ops_failed == 0);
}

TEST_CASE("a Completion invoked before the body returns completes the op once the body returns") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  int value = 0;
  engine->push(
      [&value](RunContext& ctx) {
        Completion done = ctx.take_completion();
        done();
        std::this_thread::sleep_for(10ms);  // a chance for the next op to start too early
        value = 7;                          // the body still owns the op's writes
      },
      cpu(), {}, {v}, {.async_completion = true});
  std::atomic<int> seen{0};
  engine->push([&] { seen.store(value); }, cpu(), {v}, {});
  engine->wait_all();
  CHECK(seen.load() == 7);
}

TEST_CASE("a dropped Completion fails the op instead of hanging it") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Watchdog watchdog("an op whose Completion was dropped");
  Helpers helpers;
  Var in_body = engine.var(), on_thread = engine.var();
  engine->push([](RunContext& ctx) { Completion dropped = ctx.take_completion(); }, cpu(), {},
               {in_body}, {.name = "forgetful", .async_completion = true});
  engine->push([&helpers](RunContext& ctx) { helpers.start([dropped = ctx.take_completion()] {}); },
               cpu(), {}, {on_thread}, {.name = "forgetful on a thread", .async_completion = true});
  for (Var v : {in_body, on_thread}) {
    const std::string message = error_of([&] { engine->wait_for_var(v); });
    CAPTURE(message);
    CHECK(message.find("forgetful") != std::string::npos);
    CHECK(message.find("without being invoked") != std::string::npos);
  }
  CHECK(engine->stats().ops_failed == 2);
  CHECK_NOTHROW(engine->wait_all());  // both already thrown by wait_for_var
}

TEST_CASE("an async op that never takes its completion fails") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  engine->push([] {}, cpu(), {}, {v}, {.name = "no taker", .async_completion = true});
  const std::string message = error_of([&] { engine->wait_for_var(v); });
  CAPTURE(message);
  CHECK(message.find("no taker") != std::string::npos);
  CHECK(message.find("take_completion") != std::string::npos);
  CHECK_NOTHROW(engine->wait_all());  // already thrown by wait_for_var
  CHECK(engine->stats().ops_failed == 1);
}

TEST_CASE("taking the completion of an op not pushed as async throws") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  std::string message;
  bool threw_tandem_error = false;
  engine->push(
      [&](RunContext& ctx) {
        try {
          Completion done = ctx.take_completion();
        } catch (const tandem::Error& e) {
          threw_tandem_error = true;
          message = e.what();
        }
      },
      cpu(), {}, {v}, {.name = "plain"});
  engine->wait_for_var(v);  // the op itself completed normally
  CHECK(threw_tandem_error);
  CHECK(message.find("plain") != std::string::npos);
  CHECK(message.find("async_completion") != std::string::npos);
  engine->wait_all();
}

TEST_CASE("Completion::fail poisons the op's writes with the given error") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Helpers helpers;
  Var v = engine.var();
  engine->push(
      [&helpers](RunContext& ctx) {
        helpers.start([done = ctx.take_completion()]() mutable {
          done.fail(std::make_exception_ptr(std::runtime_error("disk on fire")));
        });
      },
      cpu(), {}, {v}, {.name = "read file", .async_completion = true});
  try {
    engine->wait_for_var(v);
    FAIL("wait_for_var should rethrow the completion's error");
  } catch (const tandem::OpError& error) {
    CHECK(error.op_name() == "read file");
    CHECK(nested_message(error) == "disk on fire");
  }
  engine->wait_all();  // already thrown by wait_for_var
}

TEST_CASE("an async op whose body throws after taking its completion fails") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Helpers helpers;
  Var v = engine.var();
  engine->push(
      [&helpers](RunContext& ctx) {
        helpers.start([done = ctx.take_completion()]() mutable { done(); });
        throw std::runtime_error("body broke");
      },
      cpu(), {}, {v}, {.name = "half async", .async_completion = true});
  try {
    engine->wait_for_var(v);
    FAIL("wait_for_var should rethrow the body's error");
  } catch (const tandem::OpError& error) {
    CHECK(nested_message(error) == "body broke");
  }
  engine->wait_all();
}

TEST_CASE("a Completion invoked twice throws the second time") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  bool second_threw = false;
  engine->push(
      [&](RunContext& ctx) {
        Completion done = ctx.take_completion();
        done();
        try {
          done();
        } catch (const tandem::Error&) {
          second_threw = true;
        }
      },
      cpu(), {}, {v}, {.async_completion = true});
  engine->wait_for_var(v);
  CHECK(second_threw);
  engine->wait_all();
}
