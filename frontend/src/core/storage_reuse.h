// Stream-ordered reuse of freed blocks, host and device: the storage of a dead array (its block
// and its var together) is parked for the next new array of the same engine, device and size,
// instead of being freed by a deletion op that runs after the array's last op.
//
// Why it is safe without waiting: the new array takes the old array's var along with its block.
// Every op on the new array writes or reads that var, and its first op (the one that creates
// it, which writes it whole) is a write, so the engine runs it after every op still queued on
// the old array, reads included, by the ordinary write-after-read rule. No fence, no wait on the
// caller's thread: the order lives in the var, as a block freed and reused on one CUDA stream is
// ordered by the stream. The block may not even be allocated yet when it changes hands (host
// memory is allocated by the first op that needs it); both arrays' ops use the same Storage, so
// whichever op runs first allocates it, once. An array that its creator fills directly, outside
// any op (nd::from_vector, nd::array: FirstWrite::by_caller in storage.h), never takes a parked
// storage: its memory may still be in use by the old array's queued ops.
//
// Why it pays: a never-syncing loop (`for (...) y = x + 1;`) runs ahead of its workers, so with
// deletion ops every iteration made a fresh var and, when its op ran, took a block the pool had
// to find among those freed by earlier deletion ops (two pushes more per iteration, and more
// blocks in flight than the synced loop uses). With parking, iteration i takes the storage of
// iteration i - 2 (iteration i - 1's array is still alive while i's result is made): the loop
// cycles through two warm blocks and two vars, like the synced loop, and pushes one op each.
//
// The trade-off: a false dependency. The new array's first write waits for the ops still
// queued on the old array, and `wait_to_read` on the new array waits for them too. The engine
// runs ready ops roughly in push order, so those older ops would mostly have run first anyway;
// what is lost is the chance to run the new array's op beside them. Limits keep that small:
// only host storage from kParkedFromBytes up is parked (small host blocks are cheap to get from
// malloc, and a tiny array's deletion usually runs at once on the releasing thread; pinned host
// storage is never parked), at most kMaxParkedStorages of them and kMaxParkedBytes in all, plus
// kMaxParkedSmallStorages small accelerator storages (past that the oldest of its class goes
// the usual deletion path), and a new array takes the oldest parked storage of its size, whose
// queue is the most likely to have drained.
//
// On an accelerator (issue 22) this is the caching allocators' stream-ordered reuse (PyTorch's
// on one stream, cudaMallocAsync's): a never-syncing loop on a GPU runs far ahead of its
// stream, and with the deletion path every iteration took a fresh block from the pool (its
// predecessors' blocks come back only once the device has finished with them, which the host
// learns late), so the pool grew to every block in flight. Parked, the block changes hands at
// once and the new array's first write is ordered on the device after the old array's last use
// by the var (an event wait, no host round trip). A parked device block counts as in use in its
// pool's statistics; an allocation that finds the device short frees the device's parked
// storages first (free_parked_on), so parking never makes an allocation fail.
//
// Engines: a parked var belongs to its engine, so storages are parked only for an engine that
// cannot be destroyed meanwhile without the front end knowing: the process-wide engine as
// nd::current_engine() last returned it (nd::set_default_engine frees its parked storages
// before it replaces it) and engines with an open nd::EngineScope (the last scope to close
// frees their parked storages). Parked vars count as alive for EngineStats::vars_alive and for
// Engine::set_default, which refuses to replace the process-wide engine while any are parked:
// nd::set_default_engine is the way to replace it from a program that used arrays.
//
// Thread-safe: arrays die on any thread (engine workers included) and are made on any thread.
#pragma once

#include <cstddef>

#include "tandem/device.h"
#include "tandem/engine.h"

namespace tandem::nd::detail {

struct Storage;

// Host arrays of at least this many bytes are parked (the host pool's first pooled size).
// Accelerator arrays of any size are: a device block is never cheap to get (a pool's lock, or a
// cudaMalloc while the pool is cold), and a dead device array's deletion op must wait for its
// fences before its deleter may run.
inline constexpr std::size_t kParkedFromBytes = 16 * 1024;
// At most this many storages of kParkedFromBytes or more are parked at once, over all engines
// and sizes.
inline constexpr std::size_t kMaxParkedStorages = 8;
// And at most this many smaller (accelerator) ones, beside them: a small block never evicts a
// large one.
inline constexpr std::size_t kMaxParkedSmallStorages = 8;
// The bytes of all parked storages together stay at most this; a bigger array is never parked.
inline constexpr std::size_t kMaxParkedBytes = std::size_t{256} << 20;

// Keeps `storage` (whose last reference is gone; its var belongs to `owner`) for a new array.
// False when it is not kept: the caller frees it by the usual deletion path.
bool park_storage(Storage* storage, Engine& owner) noexcept;

// A parked storage of `engine` on `device` with exactly `bytes`, the oldest such, taken out of
// the park with one reference; nullptr when there is none.
Storage* take_parked_storage(const Engine& engine, Device device, std::size_t bytes) noexcept;

// nd::current_engine() returned the process-wide engine `engine`.
void note_process_engine(Engine& engine) noexcept;
// The process-wide engine is about to be replaced: its parked storages are freed now.
void release_process_engine(Engine& engine) noexcept;
// An nd::EngineScope on `engine` opened or closed; the last one to close frees the parked
// storages of `engine`.
void note_scope_opened(Engine& engine);
void note_scope_closed(Engine& engine) noexcept;

// Storages parked now (for tests and statistics).
std::size_t parked_storage_count() noexcept;

// Frees every storage parked on `device` (of any engine), through the deletion path: an
// accelerator's blocks become pending frees that MemoryPool::allocate_or_wait waits for. True
// when there was one. Called when an allocation on `device` finds its memory short.
bool free_parked_on(Device device) noexcept;
// Bytes of the storages parked on `device` now.
std::size_t parked_bytes_on(Device device) noexcept;

}  // namespace tandem::nd::detail
