// Helpers shared by the engine tests: engines of each kind, and waits that time out so that a
// broken engine fails a test instead of hanging the suite.
//
// Sleeps in these tests never make a test pass: they only give a wrong engine the chance to
// misbehave (run an op too early, overlap two writes...). Everything a test asserts is
// synchronised through the engine or through the helpers below.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>  // setenv, unsetenv (POSIX)
#include <tandem/engine.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <string>
#include <thread>
#include <vector>

namespace tandem_test {

using namespace std::chrono_literals;

// How long a test waits for something that should happen promptly before calling it a failure.
// Generous, because sanitizer builds on two shared cores are slow.
inline constexpr std::chrono::milliseconds kPatience = 20s;

// A flag one thread raises and others wait for, with a timeout.
class Flag {
 public:
  void raise() {
    std::lock_guard lock(mutex_);
    raised_ = true;
    changed_.notify_all();
  }
  // True once raised; false if `timeout` passed first.
  bool wait(std::chrono::milliseconds timeout = kPatience) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [this] { return raised_; });
  }
  bool raised() {
    std::lock_guard lock(mutex_);
    return raised_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool raised_ = false;
};

// An op that blocks its worker until release(). The constructor pushes it and returns once it
// runs, so the ops a test pushes next find that worker, and the vars the op uses, busy.
class BlockingOp {
 public:
  BlockingOp(tandem::Engine& engine, const char* name, tandem::VarList reads = {},
             tandem::VarList writes = {}) {
    engine.push(
        [this] {
          started_.raise();
          release_.wait();
        },
        tandem::cpu(), reads, writes, {.name = name});
    REQUIRE(started_.wait());
  }
  void release() { release_.raise(); }

 private:
  Flag started_, release_;
};

// `parties` threads meet: each arrive() returns true once all have arrived, false on timeout.
// Proves that ops ran at the same time: with one at a time, the first to arrive times out.
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  bool arrive(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mutex_);
    ++arrived_;
    changed_.notify_all();
    return changed_.wait_for(lock, timeout, [this] { return arrived_ >= parties_; });
  }

 private:
  const int parties_;
  int arrived_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
};

// Burns roughly `n` loop iterations of CPU time (to vary when something happens, not to wait).
inline void spin_for(int n) {
  std::atomic<int> counter{0};
  for (int i = 0; i < n; ++i) counter.fetch_add(1, std::memory_order_relaxed);
}

// Ends the process with a message if the scope it guards outlives `limit`: for a would-be
// deadlock, which no assertion could unwind.
class Watchdog {
 public:
  explicit Watchdog(std::string what, std::chrono::milliseconds limit = 60s)
      : what_(std::move(what)), thread_([this, limit] { watch(limit); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    if (changed_.wait_for(lock, limit, [this] { return done_; })) return;
    std::fprintf(stderr, "FATAL: %s did not finish within %lld ms: the engine hangs\n",
                 what_.c_str(), static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(EXIT_FAILURE);
  }

  const std::string what_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

// TANDEM_TEST_SCALE (default 1): sanitizer runs scale the long stress loops down with it.
inline double test_scale() {
  const char* text = std::getenv("TANDEM_TEST_SCALE");
  if (text == nullptr) return 1.0;
  char* end = nullptr;
  const double scale = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(scale > 0)) {
    std::fprintf(stderr, "TANDEM_TEST_SCALE='%s' is not a positive number\n", text);
    std::exit(EXIT_FAILURE);
  }
  return scale;
}

// Sets an environment variable for the life of the object, then restores the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Runs the calling test once per engine kind (as doctest subcases, so a failure names the kind).
inline tandem::EngineKind each_engine_kind() {
  tandem::EngineKind kind = tandem::EngineKind::threaded;
  SUBCASE("threaded engine") {
    kind = tandem::EngineKind::threaded;
  }
  SUBCASE("naive engine") {
    kind = tandem::EngineKind::naive;
  }
  return kind;
}

// Two CPU workers whatever the machine, so tests that need two ops at once can have them.
inline tandem::EngineConfig test_config(tandem::EngineKind kind) {
  tandem::EngineConfig config;
  config.kind = kind;
  config.cpu_workers = 2;
  return config;
}

// An engine for one test, and the vars it hands out. When the test ends the vars are deleted
// (delete_var), as the contract asks of every user, then every op is waited for and the engine
// destroyed; so leak checkers find nothing left behind.
// A watchdog ends the process if the engine is still in use after kTestLimit: a test that hangs
// (an op never runs) then fails with a message naming where its engine was made.
class TestEngine {
 public:
  static constexpr std::chrono::milliseconds kTestLimit = 120s;

  explicit TestEngine(const tandem::EngineConfig& config,
                      std::source_location where = std::source_location::current())
      : watchdog_(std::string("the test whose engine was made at ") + where.file_name() + ":" +
                      std::to_string(where.line()),
                  kTestLimit),
        engine_(tandem::Engine::create(config)) {}
  explicit TestEngine(tandem::EngineKind kind,
                      std::source_location where = std::source_location::current())
      : TestEngine(test_config(kind), where) {}
  ~TestEngine() { reset(); }
  TestEngine(const TestEngine&) = delete;
  TestEngine& operator=(const TestEngine&) = delete;

  tandem::Engine* operator->() const { return engine_.get(); }
  tandem::Engine& operator*() const { return *engine_; }

  // A new var, deleted when the engine goes away. Thread-safe, like Engine::new_var.
  tandem::Var var() {
    const tandem::Var v = engine_->new_var();
    std::lock_guard lock(mutex_);
    vars_.push_back(v);
    return v;
  }

  // Deletes the vars, waits for every op (the errors left are not this helper's business: the
  // test has checked those it cares about) and destroys the engine.
  void reset() {
    if (!engine_) return;
    for (tandem::Var v : vars_) engine_->delete_var(v);
    vars_.clear();
    for (int errors = 0; errors < 1000000; ++errors) {
      try {
        engine_->wait_all();
        break;
      } catch (const std::exception&) {
      }
    }
    engine_.reset();
  }

 private:
  Watchdog watchdog_;  // first: it outlives the engine
  std::unique_ptr<tandem::Engine> engine_;
  std::mutex mutex_;
  std::vector<tandem::Var> vars_;
};

inline TestEngine make_engine(tandem::EngineKind kind,
                              std::source_location where = std::source_location::current()) {
  return TestEngine(kind, where);
}

// The message of what `fn` throws, or "" if it returns.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// What wait_for_var(var) throws ("" if nothing). A TimeoutError propagates: it fails the test.
inline std::string error_of(tandem::Engine& engine, tandem::Var var) {
  try {
    engine.wait_for_var(var, kPatience);
  } catch (const tandem::TimeoutError&) {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Every error wait_all throws, in order, until it throws none.
inline std::vector<std::string> errors_of_wait_all(tandem::Engine& engine) {
  std::vector<std::string> errors;
  for (int i = 0; i < 1000; ++i) {
    try {
      engine.wait_all(kPatience);
      return errors;
    } catch (const tandem::TimeoutError&) {
      throw;
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
  }
  FAIL("wait_all kept throwing");
  return errors;
}

// The message of the exception nested in `error` (an OpError's original), or "" if none.
inline std::string nested_message(const std::exception& error) {
  try {
    std::rethrow_if_nested(error);
  } catch (const std::exception& original) {
    return original.what();
  } catch (...) {
    return "(not a std::exception)";
  }
  return "";
}

}  // namespace tandem_test
