// Ordering rules: results follow push order, reads share a var, writes have it alone, and
// several threads may push at once.
#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "test_support.h"

namespace {

using tandem::cpu;
using tandem::EngineKind;
using tandem::Var;
using namespace tandem_test;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// One op of a small random program over `kVars` ints.
struct MiniOp {
  std::vector<int> reads;
  std::vector<int> writes;
};

constexpr int kVars = 6;

void apply(const MiniOp& op, int id, std::uint64_t* values) {
  std::uint64_t h = mix(static_cast<std::uint64_t>(id));
  for (int r : op.reads) h = mix(h ^ values[r]);
  for (int w : op.writes) values[w] = h++;
}

}  // namespace

TEST_CASE("results equal running the ops one by one in push order") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);

  std::uint64_t state = 12345;
  auto next = [&state](int bound) {
    state = mix(state);
    return static_cast<int>(state % static_cast<std::uint64_t>(bound));
  };
  std::vector<MiniOp> program(3000);
  for (MiniOp& op : program) {
    for (int i = next(3); i > 0; --i) op.reads.push_back(next(kVars));
    for (int i = 1 + next(2); i > 0; --i) op.writes.push_back(next(kVars));
  }

  std::array<std::uint64_t, kVars> expected{};
  for (std::size_t i = 0; i < program.size(); ++i) {
    apply(program[i], static_cast<int>(i), expected.data());
  }

  std::array<std::uint64_t, kVars> values{};
  std::array<Var, kVars> vars;
  for (Var& v : vars) v = engine.var();
  for (std::size_t i = 0; i < program.size(); ++i) {
    std::vector<Var> reads, writes;
    for (int r : program[i].reads) reads.push_back(vars[static_cast<std::size_t>(r)]);
    for (int w : program[i].writes) writes.push_back(vars[static_cast<std::size_t>(w)]);
    engine->push([op = &program[i], id = static_cast<int>(i),
                  data = values.data()] { apply(*op, id, data); },
                 cpu(), reads, writes, {.name = "mini op"});
  }
  for (Var v : vars) engine->wait_for_var(v);
  CHECK(values == expected);
  engine->wait_all();
}

TEST_CASE("ops that only read a var run at the same time") {
  auto engine = make_engine(EngineKind::threaded);
  Var v = engine.var();
  int value = 0;
  engine->push([&value] { value = 7; }, cpu(), {}, {v});

  // Each read waits (with a timeout) for the other: if reads ran one at a time, the first
  // would time out and report it.
  Rendezvous both_reads(2);
  std::atomic<int> met{0};
  std::atomic<int> saw_value{0};
  for (int i = 0; i < 2; ++i) {
    engine->push(
        [&] {
          if (value == 7) saw_value.fetch_add(1);
          if (both_reads.arrive()) met.fetch_add(1);
        },
        cpu(), {v}, {}, {.name = "reader"});
  }
  engine->wait_all();
  CHECK(met.load() == 2);
  CHECK(saw_value.load() == 2);
}

TEST_CASE("writes of one var never overlap") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  Var unrelated = engine.var();
  std::atomic<int> active{0};
  std::atomic<int> overlaps{0};
  int plain_counter = 0;  // not atomic: a data race here is what TSan would catch
  for (int i = 0; i < 200; ++i) {
    engine->push(
        [&, i] {
          if (active.fetch_add(1) != 0) overlaps.fetch_add(1);
          if (i % 20 == 0) std::this_thread::sleep_for(1ms);  // a chance to overlap
          ++plain_counter;
          active.fetch_sub(1);
        },
        cpu(), {}, {v});
    // Independent work keeps the other worker busy looking for ops.
    engine->push([] {}, cpu(), {}, {unrelated});
  }
  engine->wait_for_var(v);
  CHECK(overlaps.load() == 0);
  CHECK(plain_counter == 200);
  engine->wait_all();
}

TEST_CASE("a write waits for every earlier read") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  std::atomic<int> reads_done{0};
  for (int i = 0; i < 3; ++i) {
    engine->push(
        [&reads_done] {
          std::this_thread::sleep_for(20ms);  // a chance for the write to start too early
          reads_done.fetch_add(1);
        },
        cpu(), {v}, {});
  }
  int reads_seen_by_write = -1;
  engine->push([&] { reads_seen_by_write = reads_done.load(); }, cpu(), {}, {v});
  engine->wait_for_var(v);
  CHECK(reads_seen_by_write == 3);
}

TEST_CASE("a read waits for the earlier write") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  int value = 0;
  engine->push(
      [&value] {
        std::this_thread::sleep_for(30ms);  // a chance for the read to start too early
        value = 42;
      },
      cpu(), {}, {v});
  std::atomic<int> seen{-1};
  engine->push([&] { seen.store(value); }, cpu(), {v}, {});
  engine->wait_all();
  CHECK(seen.load() == 42);
}

TEST_CASE("a write waits for the earlier write, and later reads wait for it") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  int value = 0;
  engine->push(
      [&value] {
        std::this_thread::sleep_for(20ms);
        value = 1;
      },
      cpu(), {}, {v});
  engine->push([&value] { value = value * 10 + 2; }, cpu(), {}, {v});
  std::atomic<int> read_after{0};
  engine->push([&] { read_after.store(value); }, cpu(), {v}, {});
  engine->wait_all();
  CHECK(value == 12);
  CHECK(read_after.load() == 12);
}

TEST_CASE("a var listed twice in one set counts once") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Watchdog watchdog("an op with duplicate vars");
  Var a = engine.var(), b = engine.var(), w = engine.var();
  int runs = 0;
  // If duplicates were queued twice, the op's second write slot would wait for its first.
  engine->push([&runs] { ++runs; }, cpu(), {a, a, b, a}, {w, w});
  engine->wait_for_var(w);
  CHECK(runs == 1);

  // More vars than fit inline in an op record.
  std::vector<Var> many;
  for (int i = 0; i < 9; ++i) many.push_back(engine.var());
  std::vector<Var> reads = many, writes = {many[0], many[1], many[0], many[1]};
  reads.insert(reads.end(), many.begin(), many.end());
  engine->push([&runs] { ++runs; }, cpu(), reads, writes);
  engine->push([&runs] { ++runs; }, cpu(), {}, writes);
  engine->wait_all();
  CHECK(runs == 3);
  CHECK(engine->stats().ops_pushed == 3);
}

TEST_CASE("a var in both the read and the write set counts as a write") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Var v = engine.var();
  std::atomic<bool> earlier_read_done{false};
  std::atomic<bool> update_running{false};
  std::atomic<bool> update_saw_read_done{false};
  std::atomic<bool> later_read_overlapped{true};
  engine->push(
      [&] {
        std::this_thread::sleep_for(20ms);
        earlier_read_done.store(true);
      },
      cpu(), {v}, {});
  // Were this a read, it could run beside the read before it and the read after it.
  engine->push(
      [&] {
        update_running.store(true);
        update_saw_read_done.store(earlier_read_done.load());
        std::this_thread::sleep_for(20ms);
        update_running.store(false);
      },
      cpu(), {v}, {v});
  engine->push([&] { later_read_overlapped.store(update_running.load()); }, cpu(), {v}, {});
  engine->wait_all();
  CHECK(update_saw_read_done.load());
  CHECK_FALSE(later_read_overlapped.load());
}

TEST_CASE("threads pushing ops on a pair of vars in opposite orders do not deadlock") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Watchdog watchdog("pushes of {a,b} and {b,a} from four threads");
  Var a = engine.var(), b = engine.var();
  long long value_a = 0, value_b = 0;
  std::atomic<int> torn{0};
  constexpr int kThreads = 4, kOpsPerThread = 2000;
  std::vector<std::thread> pushers;
  for (int t = 0; t < kThreads; ++t) {
    pushers.emplace_back([&, t] {
      for (int i = 0; i < kOpsPerThread; ++i) {
        auto body = [&] {
          if (value_a != value_b) torn.fetch_add(1);
          ++value_a;
          ++value_b;
        };
        if ((i + t) % 2 == 0) {
          engine->push(body, cpu(), {}, {a, b});
        } else {
          engine->push(body, cpu(), {b}, {b, a});
        }
        if (i % 3 == 0) {
          engine->push(
              [&] {
                if (value_a != value_b) torn.fetch_add(1);
              },
              cpu(), {b, a}, {});
        }
      }
    });
  }
  for (auto& thread : pushers) thread.join();
  engine->wait_all();
  CHECK(torn.load() == 0);
  CHECK(value_a == kThreads * kOpsPerThread);
  CHECK(value_b == kThreads * kOpsPerThread);
}

TEST_CASE("each pushing thread's ops keep that thread's push order") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  constexpr int kThreads = 3, kOpsPerThread = 3000;
  Var shared = engine.var();
  long long shared_total = 0;
  std::array<Var, kThreads> own;
  std::array<int, kThreads> next_expected{};
  std::array<int, kThreads> out_of_order{};
  for (Var& v : own) v = engine.var();
  std::vector<std::thread> pushers;
  for (int t = 0; t < kThreads; ++t) {
    pushers.emplace_back([&, t] {
      const auto slot = static_cast<std::size_t>(t);
      for (int i = 0; i < kOpsPerThread; ++i) {
        if (i % 4 == 0) {
          engine->push(
              [&, slot, i] {
                if (next_expected[slot] != i) ++out_of_order[slot];
                next_expected[slot] = i + 1;
                shared_total += i;
              },
              cpu(), {}, {own[slot], shared});
        } else {
          engine->push(
              [&, slot, i] {
                if (next_expected[slot] != i) ++out_of_order[slot];
                next_expected[slot] = i + 1;
              },
              cpu(), {shared}, {own[slot]});
        }
      }
    });
  }
  for (auto& thread : pushers) thread.join();
  engine->wait_all();
  long long expected_total = 0;
  for (int i = 0; i < kOpsPerThread; i += 4) expected_total += i;
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK(out_of_order[static_cast<std::size_t>(t)] == 0);
    CHECK(next_expected[static_cast<std::size_t>(t)] == kOpsPerThread);
  }
  CHECK(shared_total == expected_total * kThreads);
}

TEST_CASE("an op can push another op from inside, and waiting sees its result") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Watchdog watchdog("a nested push");
  Var outer_var = engine.var(), inner_var = engine.var();
  int outer_value = 0, inner_value = 0;
  tandem::Engine& e = *engine;
  engine->push(
      [&] {
        outer_value = 1;
        e.push([&] { inner_value = outer_value + 1; }, cpu(), {outer_var}, {inner_var},
               {.name = "inner"});
      },
      cpu(), {}, {outer_var}, {.name = "outer"});
  // Once the outer op has finished, the inner op has been pushed, and can be waited for.
  engine->wait_for_var(outer_var);
  engine->wait_for_var(inner_var);
  CHECK(inner_value == 2);
  engine->wait_all();
  CHECK(engine->stats().ops_pushed == 2);
}

// Regression test: the naive engine once ran a nested push inline, in the middle of the op that
// pushed it, so the inner op ran before the outer op's later writes although it was pushed
// after the outer op (the threaded engine queues it behind the outer op).
TEST_CASE("an op pushed from inside an op runs after the op that pushed it") {
  const EngineKind kind = each_engine_kind();
  auto engine = make_engine(kind);
  Watchdog watchdog("a nested push on the pushing op's var");
  Var v = engine.var();
  int value = 0;
  tandem::Engine& e = *engine;
  engine->push(
      [&] {
        value = 1;
        e.push([&value] { value = value * 10 + 2; }, cpu(), {v}, {v}, {.name = "inner"});
        value += 5;  // still part of the outer op, which was pushed first
      },
      cpu(), {}, {v}, {.name = "outer"});
  engine->wait_all();
  CHECK(value == 62);  // (1 + 5) * 10 + 2
}
