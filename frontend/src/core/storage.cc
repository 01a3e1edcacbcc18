#include "core/storage.h"

#include <unistd.h>

#include <string>
#include <utility>

#include "core/backend.h"
#include "core/host_pool.h"
#include "core/modes.h"
#include "core/storage_reuse.h"
#include "tandem/detail/fault_injection.h"
#include "tandem/errors.h"
#include "tandem/inside_op.h"

namespace tandem::nd::detail {

namespace {

std::size_t physical_memory_bytes() {
  static const std::size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    return pages > 0 && page_size > 0
               ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size)
               : ~std::size_t{0};
  }();
  return bytes;
}

std::string describe_bytes(std::size_t bytes) {
  const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
  return std::to_string(bytes) + " bytes (" + std::to_string(gib) + " GiB)";
}

// Arrays at least this big get their memory back through an early, urgent op (see release).
constexpr std::size_t kEarlyFreeBytes = 64 * 1024;

// Freed Storage objects, for reuse: an array is created on a front-end thread and its storage
// freed by the engine on a worker, a pattern malloc serves slowly (the worker's thread cache
// fills up while the front end's stays empty), and a mutex here would make the two threads
// contend on every op. Workers push returned objects onto a lock-free stack; a front-end thread
// takes the whole stack at once (an exchange, so no ABA problem) into its own thread-local list
// and allocates from there.
class StoragePool {
 public:
  Storage* acquire() {
    thread_local LocalList local;
    if (local.head == nullptr) local.head = returned_.exchange(nullptr, std::memory_order_acquire);
    if (Storage* storage = local.head) {
      local.head = storage->next_free;
      storage->next_free = nullptr;
      return storage;
    }
    return new Storage;
  }

  void give_back(Storage* storage) noexcept {
    storage->engine = nullptr;
    storage->data.store(nullptr, std::memory_order_relaxed);
    storage->free_announced = false;
    storage->pinned = nullptr;
    storage->references.store(1, std::memory_order_relaxed);
    storage->next_free = returned_.load(std::memory_order_relaxed);
    while (!returned_.compare_exchange_weak(storage->next_free, storage, std::memory_order_release,
                                            std::memory_order_relaxed)) {
    }
  }

 private:
  struct LocalList {
    Storage* head = nullptr;
    ~LocalList() {
      while (head != nullptr) delete std::exchange(head, head->next_free);
    }
  };
  std::atomic<Storage*> returned_{nullptr};
};

// Never destroyed: engine deleters may return storage during static destruction.
StoragePool& storage_pool() {
  static StoragePool* pool = new StoragePool;
  return *pool;
}

}  // namespace

// The last reference is gone: park the storage for a new array of the same size
// (storage_reuse.h), or hand it to the engine to free after its last op.
//
// The var is deleted through Engine::owner(var), not `storage->engine`: an array may outlive
// the Engine object it was made on (a private engine destroyed first), and its var then belongs
// to a stand-in engine that still exists.
void release(Storage* storage) noexcept {
  if (storage->references.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Engine* owner = nullptr;
  try {
    owner = &Engine::owner(storage->var);
  } catch (...) {
    return;  // the var is not the engine's any more: leaking beats freeing memory in use
  }
  // Inside a capture window the storage becomes a temporary the graph owns (or, from before
  // the window, is deleted when the window closes): never parked for an eager array.
  if (!capturing_on_this_thread() && park_storage(storage, *owner)) return;
  free_storage(storage, *owner);
}

// The engine's ready queue is FIFO, and a deleter becomes ready only when the last op on its var
// finishes: in a loop that queues many independent ops, every deleter would wait behind every
// queued op, so all outputs would be alive at once. For big arrays a priority op writing the var
// frees the memory first: it still runs after every earlier op on the array, but ahead of
// ordinary ready ops, so the memory goes back to the pool (and the next op's output reuses it)
// as soon as its last user is done.
//
// Accelerator storage has no early free: an accelerator op's body runs at launch, ahead of its
// stream, so only the deleter (which runs after the device has finished with the var) may give
// the block back. Its pool is told at once that the block is coming back (expect_free), so that
// an allocation meanwhile waits for it rather than failing.
//
// Inside a capture window (the capture mode, core/modes.h) the storage is a temporary the graph
// will own, or an array from before the window: no early free and no announcement then, and a
// deletion the engine refuses (a var from before the window) is retried when the window closes.
void free_storage(Storage* storage, Engine& owner) noexcept {
  const bool capturing = capturing_on_this_thread();
  MemoryBlock announced;
  if (storage->accelerator != nullptr && !capturing) {
    // An op not launched yet may still allocate the memory (when creation could not): then the
    // deleter frees it without an announcement.
    void* data = storage->data.load(std::memory_order_acquire);
    if (data != nullptr && data != storage->inline_data) {
      announced = MemoryBlock{data, MemoryPool::size_class(storage->bytes)};
      storage->accelerator->device_pool().expect_free(announced);
      storage->free_announced = true;
    }
  }
  try {
    if (storage->bytes >= kEarlyFreeBytes && storage->accelerator == nullptr && !capturing) {
      owner.push([storage] { storage->free_data(); }, storage->device, {}, {storage->var},
                 {.name = "free", .priority = 1, .no_skip = true});
    }
    owner.delete_var(storage->var, [storage] {
      storage->free_data();
      storage_pool().give_back(storage);
    });
  } catch (...) {
    // The engine refused the deletion: leaking beats freeing memory an op may still use.
    if (announced.data != nullptr) {
      storage->free_announced = false;
      storage->accelerator->device_pool().cancel_expected_free(announced);
    }
    if (capturing) mode_of(ModeKind::capture)->defer_deletion(storage);
  }
}

void delete_storage(Storage* storage) noexcept {
  Engine* owner = nullptr;
  try {
    owner = &Engine::owner(storage->var);
  } catch (...) {
    return;  // the var is not the engine's any more: leaking beats freeing memory in use
  }
  free_storage(storage, *owner);
}

void retain(Storage* storage) noexcept {
  storage->references.fetch_add(1, std::memory_order_relaxed);
}

namespace {

// Throws when fault injection fails this host allocation. Out of line, so that the message's
// strings stay out of the allocation path's frame (callgrind: +4 instructions per op inline).
[[gnu::noinline, gnu::cold]] void inject_host_allocation_fault(const Storage& storage) {
  if (!tandem::detail::inject_fault(testing::FaultKind::host_allocation)) return;
  throw Error("tandem: out of memory on " + to_string(storage.device) + " allocating " +
              describe_bytes(storage.bytes) +
              tandem::detail::injected_fault_note(testing::FaultKind::host_allocation));
}

// Device memory or host memory, by where the storage lives. Zero-byte arrays on any device use
// the inline bytes: no kernel dereferences them, and nothing is allocated.
void* allocate_for(Storage& storage) {
  if (storage.bytes == 0) return storage.inline_data;
  if (storage.accelerator != nullptr) {
    return storage.accelerator->device_pool().allocate(storage.bytes).data;  // throws on OOM
  }
  if (storage.pinned != nullptr) return storage.pinned->allocate(storage.bytes).data;
  if (storage.bytes <= Storage::kInlineBytes) return storage.inline_data;
  // Test-only (tandem/detail/fault_injection.h): the host has no memory for this array.
  if (tandem::detail::faults_armed()) inject_host_allocation_fault(storage);
  return host_allocate(storage.bytes);
}

void free_for(Storage& storage, void* memory) noexcept {
  if (memory == nullptr || memory == storage.inline_data) return;
  if (storage.accelerator != nullptr) {
    const MemoryBlock block{memory, MemoryPool::size_class(storage.bytes)};
    MemoryPool& pool = storage.accelerator->device_pool();
    if (storage.free_announced) {
      storage.free_announced = false;
      pool.free_expected(block);
    } else {
      pool.free(block);
    }
    return;
  }
  if (storage.pinned != nullptr) {
    storage.pinned->free(MemoryBlock{memory, MemoryPool::size_class(storage.bytes)});
    return;
  }
  host_free(memory, storage.bytes);
}

// At creation, on the caller's thread: the one place where an allocation may wait for the
// frees already queued on the device (see storage.h). Never from inside an op, where the free
// it would wait for could be queued behind that op: there, and when the memory cannot be had
// even after the frees, the first op that needs the memory allocates it (and reports the
// failure).
// Storages parked on the device (storage_reuse.h) hold blocks that no array uses: when memory is
// short they are freed (as pending frees, which allocate_or_wait waits for) and the allocation
// is tried again.
void allocate_device_memory(Storage& storage) noexcept {
  MemoryPool& pool = storage.accelerator->device_pool();
  const bool may_wait = !inside_op();
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      const MemoryBlock block =
          may_wait ? pool.allocate_or_wait(storage.bytes) : pool.allocate(storage.bytes);
      // A parked storage taken without memory may meanwhile get it from a queued op of its old
      // array (data_or_allocate): the first pointer stays, the other block goes back.
      void* expected = nullptr;
      if (!storage.data.compare_exchange_strong(expected, block.data, std::memory_order_acq_rel)) {
        pool.free(block);
      }
      return;
    } catch (const std::exception&) {
      // Left to the op, which fails with the same error at its launch.
      if (attempt > 0 || !may_wait || !free_parked_on(storage.device)) return;
    }
  }
}

}  // namespace

void* Storage::data_or_allocate() {
  void* current = data.load(std::memory_order_acquire);
  if (current != nullptr) return current;
  void* fresh = allocate_for(*this);
  if (fresh == nullptr) {
    throw Error("tandem: out of memory on " + to_string(device) + " allocating " +
                describe_bytes(bytes));
  }
  if (data.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) return fresh;
  free_for(*this, fresh);
  return current;
}

void Storage::free_data() noexcept {
  free_for(*this, data.exchange(nullptr, std::memory_order_acq_rel));
}

StorageRef create_storage(Engine& engine, Device device, std::size_t bytes, const char* op,
                          FirstWrite first_write, MemoryPool* pinned) {
  require_backend(device, op);
  if (pinned != nullptr && device.is_accelerator()) {
    throw Error(std::string("tandem: ") + op + ": pinned memory asked for on " + to_string(device) +
                "; pinned memory is host memory: only cpu arrays can be pinned");
  }
  Accelerator* accelerator = device.is_accelerator() ? &tandem::accelerator(device) : nullptr;
  const std::size_t capacity =
      accelerator != nullptr ? accelerator->memory_capacity() : physical_memory_bytes();
  if (bytes > capacity) {
    throw Error(std::string("tandem: ") + op + ": " + describe_bytes(bytes) + " asked for on " +
                to_string(device) + ", more than its " + describe_bytes(capacity));
  }
  // A parked storage keeps its var: the new array's first op, a write, is ordered after every
  // op still queued on the array that held it (storage_reuse.h).
  // Never inside a capture window: a var the graph will own must not be one an eager array may
  // still be using, nor the reverse.
  if (first_write == FirstWrite::by_op && pinned == nullptr && !capturing_on_this_thread()) {
    if (Storage* parked = take_parked_storage(engine, device, bytes)) {
      // A device storage parked before it had memory (its creation found the device full) gets
      // it now, as a fresh one does: at creation, waiting for pending frees if need be.
      if (parked->accelerator != nullptr && bytes > 0 &&
          parked->data.load(std::memory_order_acquire) == nullptr) {
        allocate_device_memory(*parked);
      }
      return StorageRef(parked);
    }
  }
  Storage* storage = storage_pool().acquire();
  try {
    storage->var = engine.new_var();
  } catch (...) {
    storage_pool().give_back(storage);
    throw;
  }
  storage->bytes = bytes;
  storage->device = device;
  storage->accelerator = accelerator;
  storage->pinned = pinned;
  storage->engine = &engine;
  if (accelerator != nullptr && bytes > 0) allocate_device_memory(*storage);
  return StorageRef(storage);
}

}  // namespace tandem::nd::detail
