// ObjectPool: recycles engine records so that the steady state allocates nothing.
//
// Each thread keeps a private free list; ops are typically acquired on the pushing thread and
// released on a worker, so lists drift between threads. A thread whose list grows past two
// batches hands one batch to the shared list, and a thread that runs dry takes one back: the
// shared mutex is taken once per kBatch objects, never per op. Objects are never returned to
// the system (the shared list is a deliberately leaked singleton, so it outlives every
// thread's cache, including the main thread's at exit).
//
// The fast paths (acquire and release with a non-empty, not overfull cache) touch only the
// calling thread's cache: one initial-exec TLS access (fast_tls.h), no function-local static
// guard, no initialisation wrapper. The cache is therefore a plain constinit struct; the
// destructor that hands a finishing thread's objects back lives in a second thread_local,
// `exit_hook_`, touched only on the slow paths: a refill, a give-back, and a release into an
// empty cache (so every thread that holds objects has armed it).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "base/assertions.h"
#include "base/fast_tls.h"

namespace tandem::detail {

// `Link` is the member T uses as its free-list pointer while pooled.
template <class T, T* T::*Link>
class ObjectPool {
 public:
  static T* acquire() {
    LocalCache& cache = cache_;
    if (cache.head == nullptr) [[unlikely]]
      refill(cache);
    T* object = cache.head;
    cache.head = object->*Link;
    --cache.count;
    object->*Link = nullptr;
    return object;
  }

  static void release(T* object) noexcept {
    LocalCache& cache = cache_;
    // A cheap check of ownership: the object is not this thread's last released one.
    TANDEM_ASSERT(object != nullptr && object != cache.head,
                  "an object went back to its pool twice");
    object->*Link = cache.head;
    cache.head = object;
    // A cache that was empty may have never been through a slow path: arm its exit hook now,
    // or a thread that only ever releases (a worker) would take its objects with it.
    if (++cache.count >= 2 * kBatch || cache.count == 1) [[unlikely]]
      release_slow(cache);
  }

 private:
  static constexpr std::size_t kBatch = 64;

  struct LocalCache {
    T* head = nullptr;
    std::size_t count = 0;
  };
  struct ExitHook {
    bool armed = false;
    ~ExitHook() {
      if (armed) give_back(cache_, cache_.count);
    }
  };
  struct Batch {
    T* head;
    std::size_t count;
  };
  struct Shared {
    std::mutex mutex;
    std::vector<Batch> batches;  // each: a list of up to kBatch objects
  };

  static Shared& shared() {
    static Shared* pool = new Shared();  // leaked on purpose, see above
    return *pool;
  }

  // Registers this thread's exit hook (a thread_local with a destructor is registered at its
  // first use).
  static void arm_exit_hook() noexcept { exit_hook_.armed = true; }

  [[gnu::noinline, gnu::cold]] static void refill(LocalCache& cache) {
    arm_exit_hook();
    {
      Shared& pool = shared();
      std::lock_guard lock(pool.mutex);
      if (!pool.batches.empty()) {
        cache.head = pool.batches.back().head;
        cache.count = pool.batches.back().count;
        pool.batches.pop_back();
        return;
      }
    }
    for (std::size_t i = 0; i < kBatch; ++i) {
      T* object = new T();
      object->*Link = cache.head;
      cache.head = object;
    }
    cache.count = kBatch;
  }

  [[gnu::noinline, gnu::cold]] static void release_slow(LocalCache& cache) noexcept {
    arm_exit_hook();
    if (cache.count >= 2 * kBatch) give_back(cache, kBatch);
  }

  // Moves `n` objects from the cache to the shared list, in batches of kBatch (a remainder
  // smaller than a batch still goes back as one short batch).
  [[gnu::noinline, gnu::cold]] static void give_back(LocalCache& cache, std::size_t n) noexcept {
    arm_exit_hook();
    Shared& pool = shared();
    while (n > 0 && cache.head != nullptr) {
      std::size_t take = 1;
      T* first = cache.head;
      T* last = first;
      while (take < n && take < kBatch && last->*Link != nullptr) {
        last = last->*Link;
        ++take;
      }
      cache.head = last->*Link;
      last->*Link = nullptr;
      cache.count -= take;
      n -= take;
      std::lock_guard lock(pool.mutex);
      pool.batches.push_back(Batch{first, take});
    }
  }

  static inline constinit thread_local LocalCache cache_ TANDEM_FAST_TLS{};
  static inline thread_local ExitHook exit_hook_;
};

}  // namespace tandem::detail
