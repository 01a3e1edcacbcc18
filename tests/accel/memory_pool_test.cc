// MemoryPool (tandem/accel/memory_pool.h): size classes, reuse through the cache, no reuse
// before free, the release-and-retry-once path on out of memory, and the statistics. A fake
// raw allocator with a byte budget stands in for a device.
#include "tandem/accel/memory_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// Host memory with a budget: past it `allocate` returns nullptr, like cudaMalloc failing. The
// pool calls its raw allocator outside its lock (RawAllocator's contract: thread-safe), so the
// counters are guarded; the tests read them once the threads that allocate are done.
struct BudgetAllocator : tandem::RawAllocator {
  std::mutex mutex;
  std::size_t budget;
  std::size_t used = 0;
  int allocations = 0;
  int deallocations = 0;
  int failures = 0;

  explicit BudgetAllocator(std::size_t bytes) : budget(bytes) {}

  void* allocate(std::size_t bytes) override {
    std::lock_guard lock(mutex);
    if (used + bytes > budget) {
      ++failures;
      return nullptr;
    }
    used += bytes;
    ++allocations;
    return std::malloc(bytes);
  }
  void deallocate(void* data, std::size_t bytes) noexcept override {
    std::lock_guard lock(mutex);
    used -= bytes;
    ++deallocations;
    std::free(data);
  }
};

struct PoolWithBudget {
  BudgetAllocator* raw;  // owned by the pool
  tandem::MemoryPool pool;

  explicit PoolWithBudget(std::size_t budget)
      : PoolWithBudget(std::make_unique<BudgetAllocator>(budget)) {}

 private:
  explicit PoolWithBudget(std::unique_ptr<BudgetAllocator> raw_allocator)
      : raw(raw_allocator.get()), pool(tandem::sim(1), "device memory", std::move(raw_allocator)) {}
};

constexpr std::size_t MiB = std::size_t{1} << 20;

}  // namespace

TEST_SUITE("engine.accel.memory_pool") {
  TEST_CASE("small requests round up to 512-byte multiples, large ones to quarter powers of two") {
    using tandem::MemoryPool;
    CHECK(MemoryPool::size_class(0) == 0);
    CHECK(MemoryPool::size_class(1) == 512);
    CHECK(MemoryPool::size_class(512) == 512);
    CHECK(MemoryPool::size_class(513) == 1024);
    CHECK(MemoryPool::size_class(MiB - 1) == MiB);
    CHECK(MemoryPool::size_class(MiB) == MiB);
    CHECK(MemoryPool::size_class(MiB + 1) == MiB + MiB / 4);
    CHECK(MemoryPool::size_class(5 * MiB) == 5 * MiB);
    CHECK(MemoryPool::size_class(5 * MiB + 1) == 6 * MiB);
    CHECK(MemoryPool::size_class(7 * MiB + 1) == 8 * MiB);
    for (std::size_t bytes : {std::size_t{3}, 1000 * std::size_t{1000}, 3 * MiB + 7, 900 * MiB}) {
      const std::size_t size = MemoryPool::size_class(bytes);
      CHECK(size >= bytes);
      CHECK(size <= bytes + bytes / 4 + 512);  // never more than a quarter wasted
    }
  }

  TEST_CASE("zero bytes give a null block and touch nothing") {
    PoolWithBudget p(MiB);
    const tandem::MemoryBlock block = p.pool.allocate(0);
    CHECK(block.data == nullptr);
    CHECK(block.bytes == 0);
    p.pool.free(block);
    CHECK(p.raw->allocations == 0);
  }

  TEST_CASE("a freed block is reused by the next request of its size class") {
    PoolWithBudget p(64 * MiB);
    const tandem::MemoryBlock first = p.pool.allocate(3 * MiB);
    CHECK(first.bytes == 3 * MiB);
    p.pool.free(first);
    const tandem::MemoryBlock second = p.pool.allocate(3 * MiB - 100);  // same class
    CHECK(second.data == first.data);
    CHECK(p.raw->allocations == 1);
    const tandem::MemoryPoolStats stats = p.pool.stats();
    CHECK(stats.cache_hits == 1);
    CHECK(stats.raw_allocations == 1);
    p.pool.free(second);
  }

  TEST_CASE("a block of another size class is not reused") {
    PoolWithBudget p(64 * MiB);
    const tandem::MemoryBlock small = p.pool.allocate(1000);
    p.pool.free(small);
    const tandem::MemoryBlock big = p.pool.allocate(2 * MiB);
    CHECK(big.data != small.data);
    CHECK(p.raw->allocations == 2);
    p.pool.free(big);
  }

  TEST_CASE("no block is handed out twice before it is freed") {
    PoolWithBudget p(256 * MiB);
    std::vector<tandem::MemoryBlock> live;
    std::set<void*> seen;
    for (int i = 0; i < 50; ++i) {
      live.push_back(p.pool.allocate(4096));
      CHECK(seen.insert(live.back().data).second);
    }
    // Free half and take as many again: the new ones come from the freed half only.
    std::set<void*> freed;
    for (int i = 0; i < 25; ++i) {
      freed.insert(live.back().data);
      p.pool.free(live.back());
      live.pop_back();
    }
    std::set<void*> still_live;
    for (const auto& block : live) still_live.insert(block.data);
    for (int i = 0; i < 25; ++i) {
      live.push_back(p.pool.allocate(4096));
      CHECK(still_live.count(live.back().data) == 0);
      CHECK(freed.count(live.back().data) == 1);
    }
    CHECK(p.raw->allocations == 50);
    for (const auto& block : live) p.pool.free(block);
  }

  TEST_CASE("out of memory releases the cache and retries once before it fails") {
    PoolWithBudget p(10 * MiB);
    // Fill the budget with cached blocks of one class...
    std::vector<tandem::MemoryBlock> blocks;
    for (int i = 0; i < 4; ++i) blocks.push_back(p.pool.allocate(2 * MiB));
    for (const auto& block : blocks) p.pool.free(block);
    CHECK(p.pool.stats().bytes_cached == 8 * MiB);
    // ...then ask for a class the cache cannot serve: the raw allocator fails, the cache goes
    // back, the retry succeeds.
    const tandem::MemoryBlock big = p.pool.allocate(6 * MiB);
    CHECK(big.data != nullptr);
    CHECK(p.raw->failures == 1);
    const tandem::MemoryPoolStats stats = p.pool.stats();
    CHECK(stats.oom_retries == 1);
    CHECK(stats.bytes_cached == 0);
    CHECK(stats.raw_frees == 4);
    CHECK(stats.bytes_in_use == 6 * MiB);
    p.pool.free(big);
  }

  TEST_CASE("out of memory after the retry throws an error naming the device and the size") {
    PoolWithBudget p(4 * MiB);
    const tandem::MemoryBlock held = p.pool.allocate(3 * MiB);
    const std::size_t asked = 2 * MiB + 12345;
    try {
      (void)p.pool.allocate(asked);
      FAIL("allocate should have thrown");
    } catch (const tandem::OutOfMemoryError& e) {
      const std::string message = e.what();
      CHECK(message.find("sim(1)") != std::string::npos);
      CHECK(message.find(std::to_string(asked)) != std::string::npos);
      CHECK(message.find("device memory") != std::string::npos);
      CHECK(e.device() == tandem::sim(1));
      CHECK(e.bytes() == asked);
    }
    CHECK(p.raw->failures == 2);  // the first try and the one retry
    CHECK(p.pool.stats().oom_retries == 1);
    // The pool still works after the error.
    p.pool.free(held);
    const tandem::MemoryBlock again = p.pool.allocate(asked);
    CHECK(again.data != nullptr);
    p.pool.free(again);
  }

  TEST_CASE("out of memory tells bytes of live blocks from bytes whose free is queued") {
    PoolWithBudget p(4 * MiB);
    const tandem::MemoryBlock live = p.pool.allocate(1 * MiB);
    const tandem::MemoryBlock leaving = p.pool.allocate(2 * MiB);
    p.pool.expect_free(leaving);
    CHECK(p.pool.stats().bytes_pending_free == 2 * MiB);
    try {
      (void)p.pool.allocate(2 * MiB);  // does not wait: the pending free does not count
      FAIL("allocate should have thrown");
    } catch (const tandem::OutOfMemoryError& e) {
      const std::string message = e.what();
      INFO(message);
      CHECK(message.find(std::to_string(1 * MiB) + " bytes (1.0 MiB) in use by live arrays") !=
            std::string::npos);
      CHECK(message.find(std::to_string(2 * MiB) +
                         " bytes (2.0 MiB) by freed arrays whose free waits for queued ops") !=
            std::string::npos);
    }
    p.pool.free_expected(leaving);
    CHECK(p.pool.stats().bytes_pending_free == 0);
    p.pool.free(live);
  }

  TEST_CASE("allocate_or_wait waits for a pending free instead of failing") {
    PoolWithBudget p(4 * MiB);
    const tandem::MemoryBlock leaving = p.pool.allocate(3 * MiB);
    p.pool.expect_free(leaving);
    // Another thread frees the block, before or while the allocation waits: either way the
    // allocation gets the memory.
    std::thread freer([&] { p.pool.free_expected(leaving); });
    const tandem::MemoryBlock block = p.pool.allocate_or_wait(3 * MiB);
    freer.join();
    CHECK(block.data != nullptr);
    CHECK(p.pool.stats().bytes_pending_free == 0);
    p.pool.free(block);
    // With nothing pending it fails at once, like allocate.
    const tandem::MemoryBlock held = p.pool.allocate(3 * MiB);
    CHECK_THROWS_AS((void)p.pool.allocate_or_wait(3 * MiB), tandem::OutOfMemoryError);
    // A cancelled announcement is not waited for either.
    p.pool.expect_free(held);
    p.pool.cancel_expected_free(held);
    CHECK_THROWS_AS((void)p.pool.allocate_or_wait(3 * MiB), tandem::OutOfMemoryError);
    p.pool.free(held);
  }

  TEST_CASE("allocate_or_wait waits for as many pending frees as it needs") {
    PoolWithBudget p(4 * MiB);
    std::vector<tandem::MemoryBlock> leaving;
    for (int i = 0; i < 4; ++i) leaving.push_back(p.pool.allocate(1 * MiB));
    for (const tandem::MemoryBlock& block : leaving) p.pool.expect_free(block);
    std::thread freer([&] {
      for (const tandem::MemoryBlock& block : leaving) p.pool.free_expected(block);
    });
    const tandem::MemoryBlock block = p.pool.allocate_or_wait(4 * MiB);
    freer.join();
    CHECK(block.data != nullptr);
    p.pool.free(block);
  }

  TEST_CASE("stats track bytes in use, cached, and the peak") {
    PoolWithBudget p(64 * MiB);
    const tandem::MemoryBlock a = p.pool.allocate(1000);  // class 1024
    const tandem::MemoryBlock b = p.pool.allocate(MiB);
    tandem::MemoryPoolStats stats = p.pool.stats();
    CHECK(stats.bytes_in_use == MiB + 1024);
    CHECK(stats.peak_bytes_in_use == MiB + 1024);
    CHECK(stats.bytes_cached == 0);
    p.pool.free(b);
    stats = p.pool.stats();
    CHECK(stats.bytes_in_use == 1024);
    CHECK(stats.bytes_cached == MiB);
    CHECK(stats.peak_bytes_in_use == MiB + 1024);
    p.pool.release_cached();
    stats = p.pool.stats();
    CHECK(stats.bytes_cached == 0);
    CHECK(stats.raw_frees == 1);
    CHECK(p.raw->used == 1024);
    p.pool.free(a);
  }

  TEST_CASE("the destructor returns every cached block to the raw allocator") {
    auto raw = std::make_unique<BudgetAllocator>(64 * MiB);
    BudgetAllocator* observed = raw.get();
    int deallocations = 0;
    {
      // Count through a wrapper that outlives the pool's copy of the allocator.
      struct Counting : tandem::RawAllocator {
        std::unique_ptr<BudgetAllocator> inner;
        int* deallocations;
        void* allocate(std::size_t bytes) override { return inner->allocate(bytes); }
        void deallocate(void* data, std::size_t bytes) noexcept override {
          ++*deallocations;
          inner->deallocate(data, bytes);
        }
      };
      auto counting = std::make_unique<Counting>();
      counting->inner = std::move(raw);
      counting->deallocations = &deallocations;
      tandem::MemoryPool pool(tandem::sim(0), "device memory", std::move(counting));
      for (int i = 0; i < 3; ++i) pool.free(pool.allocate(static_cast<std::size_t>(i + 1) * MiB));
      CHECK(observed->used > 0);
    }
    CHECK(deallocations == 3);
  }

  TEST_CASE("threads allocating and freeing concurrently never share a live block") {
    PoolWithBudget p(512 * MiB);
    std::vector<std::thread> threads;
    std::atomic<int> overlaps{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&p, &overlaps, t] {
        for (int i = 0; i < 2000; ++i) {
          const tandem::MemoryBlock block =
              p.pool.allocate(static_cast<std::size_t>(512 * (1 + i % 3)));
          auto* marker = static_cast<int*>(block.data);
          *marker = t;
          std::this_thread::yield();
          if (*marker != t) overlaps.fetch_add(1);
          p.pool.free(block);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    CHECK(overlaps.load() == 0);
    const tandem::MemoryPoolStats stats = p.pool.stats();
    CHECK(stats.bytes_in_use == 0);
    CHECK(stats.cache_hits + stats.raw_allocations == 8000);
  }
}

TEST_CASE("a bounded cache gives blocks freed past its limit back to the raw allocator") {
  auto owned = std::make_unique<BudgetAllocator>(std::size_t{1} << 30);
  BudgetAllocator* raw = owned.get();
  // Room for two 4 KiB blocks (size class 4096) in the cache, not three.
  tandem::MemoryPool pool(tandem::cpu(), "host memory", std::move(owned), 2 * 4096);
  const tandem::MemoryBlock a = pool.allocate(4096);
  const tandem::MemoryBlock b = pool.allocate(4096);
  const tandem::MemoryBlock c = pool.allocate(4096);
  pool.free(a);
  pool.free(b);
  pool.free(c);  // past the limit
  const tandem::MemoryPoolStats stats = pool.stats();
  CHECK(stats.bytes_cached == 2 * 4096);
  CHECK(stats.raw_frees == 1);
  CHECK(stats.bytes_in_use == 0);
  CHECK(raw->deallocations == 1);
  // The cached ones are still reused.
  const tandem::MemoryBlock again = pool.allocate(4000);
  CHECK(pool.stats().cache_hits == 1);
  pool.free(again);
}
