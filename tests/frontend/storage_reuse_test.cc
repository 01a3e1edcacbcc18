// Stream-ordered reuse of a dead array's storage (frontend/src/core/storage_reuse.h): a new array
// of the same size takes the block and the var of a dead one, so its first write is ordered after
// every op still queued on the dead array, without a wait.
#include <doctest/doctest.h>

#include <tandem/accel/accelerator.h>
#include <tandem/tandem.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace nd = tandem::nd;
using tandem::Engine;
using tandem::EngineConfig;
using tandem::EngineKind;
using tandem::Var;

namespace {

// 128 x 128 float32: 64 KiB, big enough to be parked, and small enough for the CPU kernels to
// run in one block (no parallel_for: ThreadSanitizer cannot see through uninstrumented oneTBB).
constexpr std::int64_t kSide = 128;

bool all_equal(const nd::NDArray& a, float value) {
  const std::vector<float> values = a.to_vector<float>();
  for (float v : values) {
    if (v != value) return false;
  }
  return !values.empty();
}

std::size_t distinct(const std::vector<Var>& vars) {
  std::vector<Var> seen;
  for (Var var : vars) {
    bool found = false;
    for (Var other : seen) found = found || other == var;
    if (!found) seen.push_back(var);
  }
  return seen.size();
}

// An op that reads an array's first element once the test opens its gate (or after 20 s), so
// that the array's var holds a queued read until then. Construct it after the engine: the op
// refers to it until it has run.
class GatedRead {
 public:
  GatedRead(Engine& engine, const nd::NDArray& array)
      : values_(static_cast<const float*>(array.view().data)) {
    engine.push(
        [this] {
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (!gate_open_.load() && std::chrono::steady_clock::now() < give_up) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          value_read_.store(values_[0]);
        },
        tandem::cpu(), {array.var()}, {}, {.name = "gate"});
  }
  void open() { gate_open_.store(true); }
  // -1 until the read ran.
  float value_read() const { return value_read_.load(); }

 private:
  const float* values_;
  std::atomic<bool> gate_open_{false};
  std::atomic<float> value_read_{-1.0f};
};

}  // namespace

TEST_SUITE("frontend.storage_reuse") {
  TEST_CASE("a never-syncing loop cycles through two storages: no new var, no deletion op") {
    for (EngineKind kind : {EngineKind::threaded, EngineKind::naive}) {
      CAPTURE(tandem::engine_kind_name(kind));
      auto engine = Engine::create(EngineConfig{.kind = kind});
      nd::EngineScope scope(*engine);
      const nd::NDArray x = nd::ones({kSide, kSide});
      nd::NDArray y;
      for (int i = 0; i < 4; ++i) y = x + 1;  // warm up: two storages in the cycle
      engine->wait_all();
      const tandem::EngineStats before = engine->stats();
      std::vector<Var> vars;
      for (int i = 0; i < 200; ++i) {
        y = x + 1;
        vars.push_back(y.var());
      }
      engine->wait_all();
      const tandem::EngineStats after = engine->stats();
      CHECK(after.ops_pushed - before.ops_pushed == 200);  // the additions only
      CHECK(after.vars_alive == before.vars_alive);
      CHECK(distinct(vars) == 2);
      CHECK(all_equal(y, 2.0f));
    }
  }

  // Below the park's size a dead array is deleted, and when its var is idle (its op ran
  // inline) the deleter runs at once on the releasing thread: a never-syncing loop of tiny ops
  // hands nothing to a worker.
  TEST_CASE("a never-syncing loop of tiny ops runs its ops and deletions on the calling thread") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded, .cpu_workers = 2});
    nd::EngineScope scope(*engine);
    const nd::NDArray x = nd::ones({1, 2});
    engine->wait_all();  // x is readable: every addition below is ready at its push
    nd::NDArray y = x + 1;
    const tandem::EngineStats before = engine->stats();
    for (int i = 0; i < 100; ++i) y = x + 1;
    const tandem::EngineStats after = engine->stats();   // no wait
    CHECK(after.ops_pushed - before.ops_pushed == 200);  // an addition and a deletion each
    CHECK(after.ops_in_flight == 0);                     // both already ran, inline
    CHECK(after.vars_alive == before.vars_alive);
    CHECK(all_equal(y, 2.0f));
  }

  TEST_CASE("a write into a reused storage waits for the reads still queued on its old array") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded, .cpu_workers = 2});
    nd::EngineScope scope(*engine);
    nd::NDArray old_array = nd::full({kSide, kSide}, 1.0);
    GatedRead gate(*engine, old_array);
    const Var old_var = old_array.var();
    old_array = nd::NDArray();  // parked, with the gate's read still queued
    const nd::NDArray fresh = nd::full({kSide, kSide}, 2.0);
    REQUIRE(fresh.var() == old_var);  // it took the parked storage
    // The cost of the reuse: the new array is not ready while the old reader runs.
    CHECK_THROWS_AS(fresh.wait_to_read(std::chrono::milliseconds(50)), tandem::TimeoutError);
    gate.open();
    fresh.wait_to_read();
    CHECK(gate.value_read() == 1.0f);  // the gate read the old values, not the new ones
    CHECK(all_equal(fresh, 2.0f));
  }

  TEST_CASE("an array filled from host values never takes a parked storage still in use") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded, .cpu_workers = 2});
    nd::EngineScope scope(*engine);
    nd::NDArray old_array = nd::full({kSide, kSide}, 1.0);
    GatedRead gate(*engine, old_array);
    const Var old_var = old_array.var();
    old_array = nd::NDArray();
    // nd::from_vector copies on the caller's thread: into the parked block, it would overwrite
    // the values the gate is about to read.
    const nd::NDArray filled =
        nd::from_vector(std::vector<float>(kSide * kSide, 5.0f), {kSide, kSide});
    CHECK_FALSE(filled.var() == old_var);
    gate.open();
    engine->wait_all();
    CHECK(gate.value_read() == 1.0f);
    CHECK(all_equal(filled, 5.0f));
    const nd::NDArray computed = nd::full({kSide, kSide}, 3.0);
    CHECK(computed.var() == old_var);  // an array written by an op still takes it
  }

  TEST_CASE("only an array of the same engine, device and size takes a parked storage") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    auto other = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    {
      nd::EngineScope scope(*engine);
      nd::NDArray dead = nd::ones({kSide, kSide});
      const Var parked_var = dead.var();
      dead = nd::NDArray();
      const nd::NDArray wider = nd::ones({kSide, kSide + 1});
      CHECK_FALSE(wider.var() == parked_var);
      const nd::NDArray small = nd::ones({4, 4});
      CHECK_FALSE(small.var() == parked_var);
      {
        nd::EngineScope other_scope(*other);
        const nd::NDArray elsewhere = nd::ones({kSide, kSide});
        CHECK_FALSE(elsewhere.var() == parked_var);
      }
      const nd::NDArray same = nd::zeros({kSide, kSide});
      CHECK(same.var() == parked_var);
      CHECK(all_equal(same, 0.0f));
    }
    engine->wait_all();
    other->wait_all();
  }

  TEST_CASE("closing the last scope on an engine frees the storages parked for it") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    {
      nd::EngineScope scope(*engine);
      { const nd::NDArray dead = nd::ones({kSide, kSide}); }
      engine->wait_all();
      CHECK(engine->stats().vars_alive == 1);  // parked
    }
    engine->wait_all();
    CHECK(engine->stats().vars_alive == 0);
  }

  TEST_CASE("nd::set_default_engine frees the process engine's parked storages first") {
    nd::set_default_engine(EngineConfig{});
    { const nd::NDArray dead = nd::ones({kSide, kSide}) + 1; }
    CHECK_NOTHROW(nd::set_default_engine(EngineKind::naive));
    { const nd::NDArray dead = nd::ones({kSide, kSide}) + 1; }
    CHECK_NOTHROW(nd::set_default_engine(EngineConfig{}));
  }

  TEST_CASE("a never-syncing loop on sim(0) reuses device blocks in flight: no allocation") {
    // Issue 22, item 3: the device pool serves no request at all once the loop is warm (each
    // iteration takes the block and var of the array two iterations back), and the loop keeps
    // two blocks, not one per iteration in flight.
    for (EngineKind kind : {EngineKind::threaded, EngineKind::naive}) {
      CAPTURE(tandem::engine_kind_name(kind));
      auto engine = Engine::create(EngineConfig{.kind = kind});
      nd::EngineScope scope(*engine);
      tandem::MemoryPool& pool = tandem::accelerator(tandem::sim(0)).device_pool();
      const nd::NDArray x = nd::ones({kSide, kSide}, tandem::sim(0));
      nd::NDArray y;
      for (int i = 0; i < 4; ++i) y = x + 1;  // warm up: two storages in the cycle
      engine->wait_all();
      const tandem::MemoryPoolStats before = pool.stats();
      std::vector<Var> vars;
      for (int i = 0; i < 500; ++i) {
        y = x + 1;
        vars.push_back(y.var());
      }
      const tandem::MemoryPoolStats queued = pool.stats();
      engine->wait_all();
      const tandem::MemoryPoolStats after = pool.stats();
      CHECK(after.raw_allocations == before.raw_allocations);
      CHECK(after.cache_hits == before.cache_hits);
      CHECK(queued.bytes_in_use == before.bytes_in_use);  // no block per iteration in flight
      CHECK(distinct(vars) == 2);
      CHECK(all_equal(y, 2.0f));
    }
  }

  TEST_CASE("a never-syncing loop of tiny ops on sim(0) parks its blocks too: one op each") {
    // Below kParkedFromBytes only host arrays go the deletion path: a device array's deletion
    // must wait for its fences, and its block comes back to the pool only then. The dependent
    // chain of the dispatch benchmark (y = y + 1 on one float) then pushes its additions alone
    // and asks the pool for nothing.
    for (EngineKind kind : {EngineKind::threaded, EngineKind::naive}) {
      CAPTURE(tandem::engine_kind_name(kind));
      auto engine = Engine::create(EngineConfig{.kind = kind});
      nd::EngineScope scope(*engine);
      tandem::MemoryPool& pool = tandem::accelerator(tandem::sim(0)).device_pool();
      nd::NDArray y = nd::zeros({1}, nd::float32, tandem::sim(0));
      for (int i = 0; i < 4; ++i) y = y + 1;  // warm up: two storages in the cycle
      engine->wait_all();
      const tandem::MemoryPoolStats before = pool.stats();
      const tandem::EngineStats ops_before = engine->stats();
      std::vector<Var> vars;
      for (int i = 0; i < 500; ++i) {
        y = y + 1;
        vars.push_back(y.var());
      }
      engine->wait_all();
      const tandem::MemoryPoolStats after = pool.stats();
      CHECK(engine->stats().ops_pushed - ops_before.ops_pushed == 500);  // no deletion op
      CHECK(after.raw_allocations == before.raw_allocations);
      CHECK(after.cache_hits == before.cache_hits);
      CHECK(distinct(vars) == 2);
      CHECK(y.to_vector<float>() == std::vector<float>{504.0f});
    }
  }

  TEST_CASE("small device blocks are bounded apart: they never evict a large parked block") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    nd::EngineScope scope(*engine);
    nd::NDArray large = nd::ones({kSide, kSide}, tandem::sim(0));
    const Var large_var = large.var();
    large = nd::NDArray();  // parked
    // Twice as many small device arrays die as the small class holds (8), of 16 sizes.
    std::vector<nd::NDArray> small;
    for (std::int64_t i = 1; i <= 16; ++i) small.push_back(nd::ones({i}, tandem::sim(0)));
    small.clear();
    const nd::NDArray again = nd::zeros({kSide, kSide}, tandem::sim(0));
    CHECK(again.var() == large_var);
    CHECK(all_equal(again, 0.0f));
    // A small host array is still never parked.
    nd::NDArray host = nd::ones({4});
    const Var host_var = host.var();
    host = nd::NDArray();
    const nd::NDArray host_again = nd::ones({4});
    CHECK_FALSE(host_again.var() == host_var);
    engine->wait_all();
  }

  TEST_CASE("under a small in-flight bound a never-syncing loop stays correct and bounded") {
    auto engine =
        Engine::create(EngineConfig{.kind = EngineKind::threaded, .max_ops_in_flight = 8});
    nd::EngineScope scope(*engine);
    const nd::NDArray x = nd::ones({kSide, kSide});
    nd::NDArray y, z;
    for (int i = 0; i < 300; ++i) {
      y = x + static_cast<double>(i);
      z = y * 2.0;
      CHECK(engine->stats().ops_in_flight <= 8 + 32);  // the bound, within one check interval
    }
    engine->wait_all();
    CHECK(all_equal(z, 600.0f));  // (1 + 299) * 2
  }
}
