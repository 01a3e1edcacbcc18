// The park of dead arrays' storages (storage_reuse.h).
//
// One mutex guards a short FIFO of parked storages (oldest first) and the count of open scopes
// per engine. Both the decision to park (is the engine still known to be alive?) and the
// freeing of an engine's parked storages happen under it, so a storage parked by a worker while
// the last scope on its engine closes is either freed by that close or not parked at all.
// The FIFO is a fixed array: parking never allocates, since it runs in release (noexcept). It
// holds both classes of storages (large, and small accelerator ones), each bounded apart.
#include "core/storage_reuse.h"

#include <array>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "core/storage.h"

namespace tandem::nd::detail {

namespace {

struct ParkedStorage {
  Engine* owner = nullptr;
  Storage* storage = nullptr;
};

// The two classes of parked storages, each with its own bound (storage_reuse.h).
enum StorageClass : std::size_t { large_storage = 0, small_storage = 1 };

constexpr std::size_t kParkCapacity = kMaxParkedStorages + kMaxParkedSmallStorages;
constexpr std::array<std::size_t, 2> kMaxPerClass{kMaxParkedStorages, kMaxParkedSmallStorages};

StorageClass class_of(std::size_t bytes) noexcept {
  return bytes < kParkedFromBytes ? small_storage : large_storage;
}

// What a parked storage holds of its pool: an accelerator block is its size class, as the
// device pool counts it in use (a 4-byte array holds a 512-byte block); none if its allocation
// failed (left to its first op, storage.cc).
std::size_t block_bytes(const Storage& storage) noexcept {
  if (storage.data.load(std::memory_order_relaxed) == nullptr) return 0;
  return storage.accelerator != nullptr ? MemoryPool::size_class(storage.bytes) : storage.bytes;
}

// Whether a storage of `bytes` on `device` is parked at all.
bool parkable(Device device, std::size_t bytes) noexcept {
  if (bytes == 0 || bytes > kMaxParkedBytes) return false;
  return bytes >= kParkedFromBytes || device.kind != DeviceKind::cpu;
}

class StoragePark {
 public:
  bool park(Storage* storage, Engine& owner) noexcept {
    std::array<ParkedStorage, kParkCapacity> evicted;
    std::size_t evicted_count = 0;
    {
      std::lock_guard lock(mutex_);
      if (&owner != process_engine_.load(std::memory_order_relaxed) &&
          open_scopes_.find(&owner) == open_scopes_.end()) {
        return false;
      }
      // The oldest of the same class makes room; the bytes bound, the oldest of any class.
      const StorageClass kind = class_of(storage->bytes);
      while (count_of_[kind] == kMaxPerClass[kind]) {
        evicted[evicted_count++] = remove_locked(oldest_of_locked(kind));
      }
      while (bytes_ + storage->bytes > kMaxParkedBytes) {
        evicted[evicted_count++] = remove_locked(0);
      }
      parked_[count_++] = {&owner, storage};
      ++count_of_[kind];
      bytes_ += storage->bytes;
      published_count_.store(count_, std::memory_order_relaxed);
    }
    for (std::size_t i = 0; i < evicted_count; ++i) {
      free_storage(evicted[i].storage, *evicted[i].owner);
    }
    return true;
  }

  Storage* take(const Engine& engine, Device device, std::size_t bytes) noexcept {
    if (published_count_.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < count_; ++i) {
      const Storage& candidate = *parked_[i].storage;
      if (parked_[i].owner == &engine && candidate.bytes == bytes && candidate.device == device) {
        Storage* storage = remove_locked(i).storage;
        storage->references.store(1, std::memory_order_relaxed);
        return storage;
      }
    }
    return nullptr;
  }

  // Frees every parked storage of `engine` and stops parking for it as the process engine.
  void release_process_engine(Engine& engine) noexcept {
    Engine* expected = &engine;
    process_engine_.compare_exchange_strong(expected, nullptr, std::memory_order_relaxed);
    free_parked_of(engine);
  }

  void note_process_engine(Engine& engine) noexcept {
    if (process_engine_.load(std::memory_order_relaxed) != &engine) {
      process_engine_.store(&engine, std::memory_order_relaxed);
    }
  }

  void scope_opened(Engine& engine) {
    std::lock_guard lock(mutex_);
    ++open_scopes_[&engine];
  }

  void scope_closed(Engine& engine) noexcept {
    {
      std::lock_guard lock(mutex_);
      const auto it = open_scopes_.find(&engine);
      if (it == open_scopes_.end() || --it->second > 0) return;
      open_scopes_.erase(it);
    }
    // The process engine keeps parking (and keeps its parked storages) after its scopes close.
    if (&engine != process_engine_.load(std::memory_order_relaxed)) free_parked_of(engine);
  }

  std::size_t count() const noexcept { return published_count_.load(std::memory_order_relaxed); }

  bool free_parked_on(Device device) noexcept {
    return free_parked_if([device](const ParkedStorage& p) { return p.storage->device == device; });
  }

  std::size_t bytes_on(Device device) noexcept {
    std::lock_guard lock(mutex_);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < count_; ++i) {
      if (parked_[i].storage->device == device) bytes += block_bytes(*parked_[i].storage);
    }
    return bytes;
  }

 private:
  // The index of the oldest parked storage of class `kind` (one exists).
  std::size_t oldest_of_locked(StorageClass kind) const noexcept {
    std::size_t i = 0;
    while (class_of(parked_[i].storage->bytes) != kind) ++i;
    return i;
  }

  ParkedStorage remove_locked(std::size_t index) noexcept {
    const ParkedStorage removed = parked_[index];
    for (std::size_t i = index + 1; i < count_; ++i) parked_[i - 1] = parked_[i];
    --count_;
    --count_of_[class_of(removed.storage->bytes)];
    bytes_ -= removed.storage->bytes;
    published_count_.store(count_, std::memory_order_relaxed);
    return removed;
  }

  void free_parked_of(Engine& engine) noexcept {
    free_parked_if([&engine](const ParkedStorage& p) { return p.owner == &engine; });
  }

  // Frees the parked storages that `chosen` picks; true when there was one.
  template <class Chosen>
  bool free_parked_if(Chosen chosen) noexcept {
    std::array<ParkedStorage, kParkCapacity> freed;
    std::size_t freed_count = 0;
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < count_;) {
        if (chosen(parked_[i])) {
          freed[freed_count++] = remove_locked(i);
        } else {
          ++i;
        }
      }
    }
    for (std::size_t i = 0; i < freed_count; ++i) {
      free_storage(freed[i].storage, *freed[i].owner);
    }
    return freed_count > 0;
  }

  std::mutex mutex_;
  std::array<ParkedStorage, kParkCapacity> parked_{};  // oldest first, count_ of them
  std::size_t count_ = 0;
  std::array<std::size_t, 2> count_of_{};  // of count_, by StorageClass
  std::size_t bytes_ = 0;
  std::atomic<std::size_t> published_count_{0};  // count_, readable without the mutex
  std::atomic<Engine*> process_engine_{nullptr};
  std::unordered_map<Engine*, int> open_scopes_;
};

// Never destroyed: arrays may die during static destruction.
StoragePark& park() {
  static StoragePark* instance = new StoragePark;
  return *instance;
}

}  // namespace

bool park_storage(Storage* storage, Engine& owner) noexcept {
  if (storage->pinned != nullptr || !parkable(storage->device, storage->bytes)) return false;
  return park().park(storage, owner);
}

Storage* take_parked_storage(const Engine& engine, Device device, std::size_t bytes) noexcept {
  if (!parkable(device, bytes)) return nullptr;
  return park().take(engine, device, bytes);
}

bool free_parked_on(Device device) noexcept {
  return park().free_parked_on(device);
}

std::size_t parked_bytes_on(Device device) noexcept {
  return park().bytes_on(device);
}

void note_process_engine(Engine& engine) noexcept {
  park().note_process_engine(engine);
}

void release_process_engine(Engine& engine) noexcept {
  park().release_process_engine(engine);
}

void note_scope_opened(Engine& engine) {
  park().scope_opened(engine);
}

void note_scope_closed(Engine& engine) noexcept {
  park().scope_closed(engine);
}

std::size_t parked_storage_count() noexcept {
  return park().count();
}

}  // namespace tandem::nd::detail
