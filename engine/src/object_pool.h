// ObjectPool: recycles engine records so that the steady state allocates nothing.
//
// Each thread keeps a private free list; ops are typically acquired on the pushing thread and
// released on a worker, so lists drift between threads. A thread whose list grows past two
// batches hands one batch to the shared list, and a thread that runs dry takes one back: the
// shared mutex is taken once per kBatch objects, never per op. Objects are never returned to
// the system (the pool is a deliberately leaked singleton, so it outlives every thread-local
// cache, including the main thread's at exit).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace tandem::detail {

// `Link` is the member T uses as its free-list pointer while pooled.
template <class T, T* T::*Link>
class ObjectPool {
 public:
  static ObjectPool& instance() {
    static ObjectPool* pool = new ObjectPool();  // leaked on purpose, see above
    return *pool;
  }

  T* acquire() {
    LocalCache& cache = local();
    if (cache.head == nullptr) refill(cache);
    T* object = cache.head;
    cache.head = object->*Link;
    --cache.count;
    object->*Link = nullptr;
    return object;
  }

  void release(T* object) noexcept {
    LocalCache& cache = local();
    object->*Link = cache.head;
    cache.head = object;
    if (++cache.count >= 2 * kBatch) give_back(cache, kBatch);
  }

 private:
  static constexpr std::size_t kBatch = 64;

  struct LocalCache {
    T* head = nullptr;
    std::size_t count = 0;
    ~LocalCache() { ObjectPool::instance().give_back(*this, count); }
  };

  static LocalCache& local() {
    static thread_local LocalCache cache;
    return cache;
  }

  void refill(LocalCache& cache) {
    {
      std::lock_guard lock(mutex_);
      if (!batches_.empty()) {
        cache.head = batches_.back().head;
        cache.count = batches_.back().count;
        batches_.pop_back();
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

  // Moves `n` objects from the cache to the shared list, in batches of kBatch (a remainder
  // smaller than a batch still goes back as one short batch).
  void give_back(LocalCache& cache, std::size_t n) noexcept {
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
      std::lock_guard lock(mutex_);
      batches_.push_back(Batch{first, take});
    }
  }

  std::mutex mutex_;
  struct Batch {
    T* head;
    std::size_t count;
  };
  std::vector<Batch> batches_;  // each: a list of up to kBatch objects
};

}  // namespace tandem::detail
