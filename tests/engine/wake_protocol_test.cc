// The CPU executor's wake-up protocol (engine/src/cpu_executor.cc) under injected delays.
//
// This binary compiles its own copy of cpu_executor.cc with TANDEM_WAKE_POINTS, so that each
// step of the protocol where a thread could be overtaken (engine/src/wake_points.h) calls
// at_wake_point below, which at random does nothing, yields, spins or sleeps a few
// microseconds. Then it hands ops over, millions of times in all, in the three ways the protocol
// serves: a pushing thread to the workers, a worker to another (an op that pushes, an op made
// ready by a completion) and the priority lane and the drainers to each other (urgent ops,
// copies, background ops). Each hand-off is waited for before the next (after a random pause,
// so that it finds the workers spinning, yielding, parking or parked), and a watch fails the
// test when ops stay unrun for kLostAfter: with every op a few microseconds long, that is a
// lost wake-up, an op left in a queue while every worker that could run it sleeps. (The watch
// then pushes an op of each kind, whose wake-ups free the stranded op, so the test goes on and
// reports every case.)
//
// The check works: with the drainer's re-check of the queues before it parks removed, or the
// lane's idle count dropped only after it looked for copies, these tests fail within seconds
// (the commit that added them says how). ThreadSanitizer cannot find such a bug: a lost
// wake-up is not a data race. The tsan stage runs this binary too (scaled by
// TANDEM_TEST_SCALE), for the races and for its slower, differently interleaved schedule.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/spin_lock.h"
#include "test_support.h"
#include "wake_points.h"

namespace {

using tandem::cpu;
using tandem::Engine;
using tandem::EngineKind;
using tandem::Var;
using tandem::detail::WakePoint;
using namespace tandem_test;

constexpr std::size_t kPointCount = static_cast<std::size_t>(WakePoint::count);

// In WakePoint's order (a point added there without a name here is "unnamed").
const char* point_name(std::size_t point) {
  static constexpr std::array<const char*, kPointCount> kNames = {"submit_published",
                                                                  "fifo_linking",
                                                                  "lane_epoch_bumped",
                                                                  "drainer_counted",
                                                                  "drainer_idle",
                                                                  "drainer_took_op",
                                                                  "drainer_busy_again",
                                                                  "drainer_stops_polling",
                                                                  "drainer_between_counts",
                                                                  "drainer_before_recheck",
                                                                  "drainer_parks",
                                                                  "successor_requeued",
                                                                  "lane_busy",
                                                                  "lane_before_park"};
  return kNames[point] != nullptr ? kNames[point] : "unnamed";
}

// Whether the wake points perturb the threads, and how often each was reached. The counts are
// bumped with a relaxed load and store, not an atomic add: a locked add is a full barrier on
// x86 and would hide the very reorderings the test looks for. So they may miss a few hits;
// they say whether a point was reached, and roughly how often.
std::atomic<bool> perturbing{false};
std::array<std::atomic<std::uint64_t>, kPointCount> point_hits{};

std::uint64_t next_random() {
  // xorshift64*, one stream per thread.
  thread_local std::uint64_t state =
      std::hash<std::thread::id>{}(std::this_thread::get_id()) * 0x9E3779B97F4A7C15ULL | 1;
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

// A pause of a few hundred nanoseconds to a few microseconds, without giving up the core.
void spin_briefly(std::uint64_t bits) {
  for (std::uint64_t i = 0, n = bits % 2048; i < n; ++i) tandem::detail::cpu_relax();
}

}  // namespace

// Most of the time nothing, so that the protocol also runs at full speed; otherwise the thread
// yields its core, spins, or (1 in 32) sleeps up to 40 µs: long enough for the other side of
// the hand-off to run its whole part of the protocol in between.
void tandem::detail::at_wake_point(WakePoint point) noexcept {
  if (!perturbing.load(std::memory_order_relaxed)) return;
  auto& hits = point_hits[static_cast<std::size_t>(point)];
  hits.store(hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  const std::uint64_t r = next_random();
  const std::uint64_t choice = r % 32;
  if (choice < 18) return;
  if (choice < 24) {
    std::this_thread::yield();
  } else if (choice < 31) {
    spin_briefly(r >> 8);
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds((r >> 8) % 40));
  }
}

namespace {

// Turns the perturbation on for a test and gives the hits of each point during it.
class Perturbed {
 public:
  Perturbed() {
    for (std::size_t i = 0; i < kPointCount; ++i) before_[i] = point_hits[i].load();
    perturbing.store(true);
  }
  ~Perturbed() { perturbing.store(false); }
  Perturbed(const Perturbed&) = delete;
  Perturbed& operator=(const Perturbed&) = delete;

  std::uint64_t hits(WakePoint point) const {
    const auto i = static_cast<std::size_t>(point);
    return point_hits[i].load() - before_[i];
  }
  // Every point in `points` was reached (a failure names the first one that was not).
  void check_reached(std::initializer_list<WakePoint> points) const {
    for (WakePoint point : points) {
      CAPTURE(point_name(static_cast<std::size_t>(point)));
      CHECK(hits(point) > 0);
    }
  }

 private:
  std::array<std::uint64_t, kPointCount> before_{};
};

// How long an op may stay unrun before the watch calls it lost. Every op here runs for
// microseconds and every injected delay is under 40 µs, so a hand-off takes microseconds, or
// milliseconds when the machine is loaded (2 shared cores, sanitizers). A lost wake-up never
// ends by itself: nothing else is pushed until the op has run. 2 s tells the two apart with a
// wide margin on both sides.
constexpr std::chrono::milliseconds kLostAfter = 2s;
constexpr int kMaxLost = 3;
constexpr std::chrono::seconds kTimeCap{80};

// Counts the ops a test pushed and those that ran, and watches that the difference shrinks.
class HandOffWatch {
 public:
  explicit HandOffWatch(Engine& engine) : engine_(engine), thread_([this] { watch(); }) {}
  ~HandOffWatch() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  HandOffWatch(const HandOffWatch&) = delete;
  HandOffWatch& operator=(const HandOffWatch&) = delete;

  // Called before the push of each op the test waits for, and by the op when it runs.
  void pushed(std::uint64_t ops = 1) { pushed_.fetch_add(ops, std::memory_order_relaxed); }
  void ran() { ran_.fetch_add(1, std::memory_order_release); }

  // Returns once every op counted by pushed() has run (the watch sees to it that they do),
  // those that ops push included: an op counts its children before it counts itself as run,
  // so `ran` read first and then found equal to `pushed` means that no op is left running.
  // (A target read once would let the test go on while a child's parent still runs.)
  void wait_until_all_ran() {
    for (;;) {
      const std::uint64_t ran = ran_.load(std::memory_order_acquire);  // first, then pushed_
      if (ran >= pushed_.load(std::memory_order_acquire)) return;
      std::this_thread::yield();
    }
  }
  std::uint64_t handed_off() const { return ran_.load(); }
  // Whether the test should go on: fewer than `limit` hand-offs, no more than a few lost (each
  // costs kLostAfter; a broken protocol loses one every few thousand hand-offs), and within
  // kTimeCap (so that a slow machine ends the test before TestEngine's watchdog does).
  bool going_on(std::uint64_t limit) const {
    return ran_.load() < limit && lost_count_.load() < kMaxLost &&
           std::chrono::steady_clock::now() - start_ < kTimeCap;
  }

  // What the watch found: one line per lost wake-up.
  std::vector<std::string> lost() {
    std::lock_guard lock(mutex_);
    return lost_;
  }

 private:
  void watch() {
    using Clock = std::chrono::steady_clock;
    std::uint64_t last_ran = 0;
    Clock::time_point last_progress = Clock::now();
    std::unique_lock lock(mutex_);
    while (!changed_.wait_for(lock, 5ms, [this] { return stopping_; })) {
      const std::uint64_t ran = ran_.load(std::memory_order_acquire);
      const std::uint64_t pushed = pushed_.load(std::memory_order_relaxed);
      const auto now = Clock::now();
      if (ran != last_ran || ran >= pushed) {
        last_ran = ran;
        last_progress = now;
        continue;
      }
      if (now - last_progress < kLostAfter) continue;
      const tandem::EngineStats stats = engine_.stats();
      lost_.push_back(std::to_string(pushed - ran) + " op(s) unrun for " +
                      std::to_string(kLostAfter.count()) + " ms after " + std::to_string(ran) +
                      " had run (engine: " + std::to_string(stats.ops_in_flight) +
                      " op(s) in flight, " + std::to_string(stats.worker_wakes) + " wakes, " +
                      std::to_string(stats.worker_parks) + " parks; " +
                      tandem::detail::describe_cpu_executor() + ")");
      // Frees the stranded op: a push of each kind wakes a drainer (none is idle) and the lane.
      lost_count_.fetch_add(1);
      lock.unlock();
      engine_.push([] {}, cpu(), {}, {}, {.name = "nudge"});
      engine_.push([] {}, cpu(), {}, {}, {.name = "urgent nudge", .priority = 1});
      engine_.push([] {}, cpu(), {}, {}, {.name = "copy nudge", .queue = tandem::Queue::copy_h2d});
      lock.lock();
      last_progress = Clock::now();
    }
  }

  Engine& engine_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::atomic<std::uint64_t> pushed_{0};
  std::atomic<std::uint64_t> ran_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::vector<std::string> lost_;
  std::atomic<int> lost_count_{0};
  std::thread thread_;  // last: starts once the members it uses exist
};

// Between two hand-offs, a pause that lands the next one in a different state of the workers:
// none (a drainer still spins), a spin or a yield (one may be yielding or parking), or a sleep
// past spin_before_park (all parked).
void pause_between_hand_offs() {
  const std::uint64_t r = next_random();
  switch (r % 8) {
    case 0:
    case 1:
      return;
    case 2:
    case 3:
    case 4:
      spin_briefly(r >> 8);
      return;
    case 5:
    case 6:
      std::this_thread::yield();
      return;
    default:
      std::this_thread::sleep_for(std::chrono::microseconds((r >> 8) % 80));
  }
}

std::uint64_t scaled(double count) {
  return std::max<std::uint64_t>(1000, static_cast<std::uint64_t>(count * test_scale()));
}

// The threaded engine with two workers, one priority lane and a short spin, so that drainers
// park (the path where a wake-up can be lost) after nearly every hand-off.
tandem::EngineConfig protocol_config(std::chrono::microseconds spin) {
  tandem::EngineConfig config = test_config(EngineKind::threaded);
  config.priority_workers = 1;
  config.spin_before_park = spin;
  return config;
}

std::string lost_report(const std::vector<std::string>& lost) {
  std::string text;
  for (const std::string& line : lost) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("a pushing thread's ops never wait in a queue while the workers sleep") {
  for (const auto spin : {std::chrono::microseconds(2), std::chrono::microseconds(50)}) {
    CAPTURE(spin.count());
    TestEngine engine(protocol_config(spin));
    std::vector<Var> vars;
    for (int i = 0; i < 4; ++i) vars.push_back(engine.var());
    HandOffWatch watch(*engine);
    Perturbed perturbed;
    const std::uint64_t hand_offs = scaled(300000);
    while (watch.going_on(hand_offs)) {
      // One op, or a few independent ones at once (the second must wake another drainer).
      const std::uint64_t r = next_random();
      const int batch = r % 4 == 0 ? 1 + static_cast<int>((r >> 4) % 3) : 1;
      watch.pushed(static_cast<std::uint64_t>(batch));
      for (int i = 0; i < batch; ++i) {
        engine->push([&watch] { watch.ran(); }, cpu(), {}, {vars[static_cast<std::size_t>(i)]},
                     {.name = "handed over"});
      }
      watch.wait_until_all_ran();
      pause_between_hand_offs();
    }
    MESSAGE("spin ", spin.count(), " us: ", watch.handed_off(), " hand-offs");
    const auto lost = watch.lost();
    INFO(lost_report(lost));
    CHECK(lost.empty());
    CHECK(engine->stats().worker_parks > 0);
    perturbed.check_reached({WakePoint::submit_published, WakePoint::fifo_linking,
                             WakePoint::drainer_counted, WakePoint::drainer_idle,
                             WakePoint::drainer_took_op, WakePoint::drainer_busy_again,
                             WakePoint::drainer_stops_polling, WakePoint::drainer_between_counts,
                             WakePoint::drainer_before_recheck, WakePoint::drainer_parks});
  }
}

namespace {

// A round of ops that push one another: each op pushes one or two successors until the round's
// budget is spent. A successor either reads a var its parent writes (queued behind the parent,
// made ready by the parent's completion: run_next_here or a submit from the finishing worker)
// or writes a var of its own (ready at once: submitted by the parent, while it still runs).
struct Round {
  Engine* engine;
  HandOffWatch* watch;
  std::vector<Var>* vars;
  std::atomic<int> budget{0};

  void push_op(std::size_t var_index, bool after_parent) {
    watch->pushed();
    const Var v = (*vars)[var_index];
    engine->push([this, var_index] { run(var_index); }, cpu(),
                 after_parent ? tandem::VarList{v} : tandem::VarList{},
                 after_parent ? tandem::VarList{} : tandem::VarList{v}, {.name = "successor"});
  }

  void run(std::size_t var_index) {
    const std::uint64_t r = next_random();
    const int children = r % 4 == 0 ? 2 : 1;
    for (int i = 0; i < children; ++i) {
      if (budget.fetch_sub(1, std::memory_order_relaxed) <= 0) break;
      const bool after_parent = (r >> (4 + i)) % 2 == 0;
      push_op(
          after_parent ? var_index : (var_index + 1 + static_cast<std::size_t>(i)) % vars->size(),
          after_parent);
    }
    if ((r >> 8) % 4 == 0) spin_briefly(r >> 12);
    watch->ran();
  }
};

}  // namespace

TEST_CASE("workers hand ops to each other without a lost wake-up") {
  TestEngine engine(protocol_config(std::chrono::microseconds(2)));
  std::vector<Var> vars;
  for (int i = 0; i < 8; ++i) vars.push_back(engine.var());
  HandOffWatch watch(*engine);
  Perturbed perturbed;
  Round round{&*engine, &watch, &vars};
  const std::uint64_t hand_offs = scaled(1100000);
  while (watch.going_on(hand_offs)) {
    round.budget.store(1 + static_cast<int>(next_random() % 32));
    round.push_op(next_random() % vars.size(), /*after_parent=*/false);
    watch.wait_until_all_ran();
    pause_between_hand_offs();
  }
  MESSAGE(watch.handed_off(), " hand-offs");
  const auto lost = watch.lost();
  INFO(lost_report(lost));
  CHECK(lost.empty());
  CHECK(engine->stats().ops_run_next_here > 0);
  perturbed.check_reached({WakePoint::submit_published, WakePoint::drainer_busy_again,
                           WakePoint::drainer_before_recheck, WakePoint::drainer_parks});
}

TEST_CASE("the priority lane and the drainers hand urgent ops, copies and background ops over") {
  for (const int lanes : {1, 0}) {
    CAPTURE(lanes);
    tandem::EngineConfig config = protocol_config(std::chrono::microseconds(2));
    config.priority_workers = lanes;
    TestEngine engine(config);
    Var v = engine.var(), w = engine.var();
    HandOffWatch watch(*engine);
    Perturbed perturbed;
    Engine& e = *engine;
    const std::uint64_t hand_offs = scaled(150000);
    while (watch.going_on(hand_offs)) {
      const std::uint64_t r = next_random();
      switch (r % 5) {
        case 0:
          watch.pushed();
          e.push([&watch] { watch.ran(); }, cpu(), {}, {}, {.name = "urgent", .priority = 1});
          break;
        case 1:
          watch.pushed();
          e.push([&watch] { watch.ran(); }, cpu(), {}, {},
                 {.name = "copy", .queue = r % 2 ? tandem::Queue::copy_d2h : tandem::Queue::comm});
          break;
        case 2:
          watch.pushed();
          e.push([&watch] { watch.ran(); }, cpu(), {}, {}, {.name = "background", .priority = -1});
          break;
        default:
          // A compute op that, while it holds v, pushes its successor on v and an urgent op:
          // when it finishes, the successor (run_next_here) finds the urgent op ahead of it
          // unless the lane took it, and goes back to the FIFO. A copy that holds the lane for
          // a moment makes that likely.
          watch.pushed(4);
          e.push(
              [&watch] {
                spin_briefly(next_random());
                watch.ran();
              },
              cpu(), {}, {w}, {.name = "copy holding the lane", .queue = tandem::Queue::copy_h2d});
          e.push(
              [&watch, &e, v] {
                e.push([&watch] { watch.ran(); }, cpu(), {v}, {}, {.name = "successor"});
                e.push([&watch] { watch.ran(); }, cpu(), {}, {}, {.name = "urgent", .priority = 2});
                watch.ran();
              },
              cpu(), {}, {v}, {.name = "parent"});
          break;
      }
      watch.wait_until_all_ran();
      pause_between_hand_offs();
    }
    MESSAGE(lanes, " lane(s): ", watch.handed_off(), " hand-offs");
    const auto lost = watch.lost();
    INFO(lost_report(lost));
    CHECK(lost.empty());
    perturbed.check_reached({WakePoint::submit_published, WakePoint::drainer_parks});
    if (lanes > 0) {
      perturbed.check_reached({WakePoint::lane_epoch_bumped, WakePoint::lane_busy,
                               WakePoint::lane_before_park, WakePoint::successor_requeued});
    }
  }
}
