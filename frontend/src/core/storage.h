// Storage: the memory of an array and its engine var, shared by every handle and view.
//
// Storage objects are pooled: the engine's deleter returns them for reuse. Big host storages
// skip the deleter when a new array of their size can take them, var and block together
// (storage_reuse.h).
//
// Two invariants make it safe for queued ops to hold a plain `Storage*`:
// - The object is not destroyed with the last handle. The last handle either parks it for a new
//   array of its size (storage_reuse.h), which keeps its var, or queues
//   engine.delete_var(var, deleter), and the deleter frees the memory and the object after every
//   earlier op on the var has finished; every op that captured the pointer was pushed on the var
//   while a handle still existed, so it comes earlier, and a new array that takes the parked
//   object only ever writes it through ops ordered after those.
// - Host memory is allocated by the first op that needs it (data_or_allocate), on the worker
//   that runs it, not when the array is created. A program that runs far ahead of its workers
//   queues ops, not memory: memory is held from when work on it starts until its deleter.
//
// On an accelerator (sim(i), cuda(i)) the memory is a block of the device's MemoryPool, taken
// when the array is created, on the caller's thread (create_storage). The block goes back to
// the pool only in the deleter, which the engine runs once every op on the var has finished on
// the device (their event fences included): a block is never reused while a stream may still
// read or write it. Until then the pool counts it as a pending free (announced when the last
// handle goes), and an allocation that finds the device full waits for pending frees before it
// fails: freeing arrays and allocating right away never runs out of memory spuriously. That
// wait happens only at creation outside any op (tandem::inside_op()): inside an op (an
// accelerator op's launch function allocating, a user op creating arrays) the free it would
// wait for may be queued behind that very op, so there it would deadlock. An allocation that
// still fails leaves the memory to the first op that needs it, which retries once without
// waiting and throws OutOfMemoryError, so the error surfaces at the next sync point like every
// error of an op.
//
// Inside a capture window (the capture mode of core/modes.h: hybridize recording a function) a
// dropped array is a temporary the recorded graph will own: no early free and no announced device
// free then, and any reuse of dead arrays' storage must be skipped (capturing_on_this_thread()).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tandem/accel/accelerator.h"
#include "tandem/device.h"
#include "tandem/engine.h"
#include "tandem/nd/detail/storage_ref.h"

namespace tandem::nd::detail {

struct Storage {
  // Arrays of at most this many bytes keep their values inside the Storage object itself: a
  // tiny array then costs no allocation at all (Storage objects are pooled).
  static constexpr std::size_t kInlineBytes = 64;

  Engine* engine = nullptr;
  Var var;
  std::size_t bytes = 0;
  Device device;
  Accelerator* accelerator = nullptr;  // the device's, for accelerator storage; null on the cpu
  // Pinned host storage (cpu arrays only): its memory is a block of this pool, never the inline
  // bytes, so a copy stream may read or write it directly. Null: pageable host memory.
  MemoryPool* pinned = nullptr;
  std::atomic<void*> data{nullptr};
  std::atomic<std::uint32_t> references{1};  // StorageRefs (handles and views)
  Storage* next_free = nullptr;              // link in the pool of unused Storage objects
  // The device block's free is announced to its pool (MemoryPool::expect_free): the deleter
  // frees it with free_expected. Set before delete_var, read by the deleter.
  bool free_announced = false;
  // Bumped by every in-place write through the front end (+=, assign, copyto into it): the
  // autograd tape compares it with the value it saw when it saved the array for a gradient.
  // Never reset: a saved array holds its storage, so it cannot be reused meanwhile.
  std::atomic<std::uint32_t> write_version{0};
  alignas(64) unsigned char inline_data[kInlineBytes];

  // The memory, allocated on first use (concurrent readers of a never-written array may race
  // here; one allocation wins). Throws tandem::Error (OutOfMemoryError on an accelerator) when
  // it cannot be had.
  void* data_or_allocate();
  // Gives the memory back (a no-op for inline data); the storage may allocate again afterwards.
  void free_data() noexcept;
};

// Who writes a new array first. Almost always an op pushed on its var (`by_op`), which is what
// lets the array take a parked storage whose old ops may still be queued (storage_reuse.h).
// `by_caller`: the caller writes the memory directly before any op, so the storage must be
// fresh, with a new var that no op uses yet.
enum class FirstWrite { by_op, by_caller };

// A new storage of `bytes` on `device` with a new var of `engine` (or, for FirstWrite::by_op, a
// parked storage of that size, with its var). Host memory is not yet
// allocated; device memory is, when it can be had (waiting for pending frees, see above).
// Throws tandem::Error naming `op` when the device is not available, or when `bytes` is more
// than the device's memory (a mistake worth reporting at the call, not later in an op; memory
// that runs out because of other live arrays is reported by the op that needed it).
// `pinned`: a cpu storage whose memory comes from that pinned pool (allocated by the first op,
// like pageable host memory); never a parked one. Throws tandem::Error naming `op` when a
// pinned pool is given for an accelerator device.
StorageRef create_storage(Engine& engine, Device device, std::size_t bytes, const char* op,
                          FirstWrite first_write = FirstWrite::by_op, MemoryPool* pinned = nullptr);

// Frees a storage whose last reference is gone, through the deletion ops of `owner` (the engine
// of its var) that run after every op queued on it; the storage object goes back to its pool.
void free_storage(Storage* storage, Engine& owner) noexcept;

// The engine part of release: queues the deletion of a storage with no handle (a capture
// window's deferred ones, when it closes).
void delete_storage(Storage* storage) noexcept;

}  // namespace tandem::nd::detail
