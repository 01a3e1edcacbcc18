// Copies of an array's bytes between two devices: ops on the copy queues of the accelerator
// side (copy_h2d, copy_d2h, copy_d2d), so transfers overlap compute on every device.
#pragma once

#include <cstddef>

#include "tandem/accel/memory_pool.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

// Throws tandem::Error naming `op` and both devices when no copy path joins them (a cuda
// device and a sim device: go through the cpu).
void check_transfer(const char* op, Device from, Device to);

// Queues destination = source, bytes for bytes. Both contiguous, same shape and dtype, on
// different devices that check_transfer accepts; the caller has checked all of that.
//
// cpu -> accelerator: the op (queue copy_h2d of the destination) enqueues on that stream:
//   - from a pinned host array (of the accelerator's backend), the async copy alone;
//   - from pageable memory of at most kStagingChunkBytes, the staging of the host bytes into a
//     block of the accelerator's pinned pool (a host item: the host array may still be written
//     by device work queued before, e.g. a D2H op), the async copy out of the block, and the
//     return of the block after it;
//   - from more pageable memory, chunks through two pinned buffers, the memcpy of one chunk on
//     the accelerator's staging stream overlapping the DMA of the last (double buffering).
// accelerator -> cpu: the op (queue copy_d2h of the source) enqueues the copy straight into a
//   pinned destination; else the copy into a pinned block, then the copy out of it into the
//   host array, on the same stream; or, past one chunk, the mirror image of the chunked H2D.
// accelerator -> accelerator of the same kind: one peer copy on the destination's copy_d2d
//   stream.
void push_transfer(const NDArray& source, const NDArray& destination, const char* op);

// Pageable host memory crosses the bus in chunks of this size (two pinned buffers of it per
// transfer in flight): big enough that a chunk's setup (a host function, two events) is small
// beside its memcpy (spread over the cores) and DMA (about 300 us at 55 GB/s), small enough that
// the pipeline fills at once.
inline constexpr std::size_t kStagingChunkBytes = std::size_t{16} << 20;

// The pinned pool a copy of `source` to `device` lands in: the source accelerator's pinned pool
// for a copy from an accelerator to the cpu (copyto(cpu()) returns pinned arrays, as MXNet's
// copies to cpu_pinned), else null (pageable).
MemoryPool* pinned_landing(const NDArray& source, Device device);

// source.as_in_context(device) and source.copyto(destination), with the transfers named `op`
// in the profiler (allreduce's copies are told apart from the other copies by that name);
// neither is recorded by autograd. copy_into_named bumps the destination's write version like
// any in-place write.
NDArray copy_to_device_named(const NDArray& source, Device device, const char* op);
// The same, but a copy between two accelerators goes on the source's peer-copy stream instead of
// the destination's (a send): the copies one device sends then run in the order that device
// produced their sources, and a copy waiting for one device's late array never holds up, in a
// receiver's queue, the copies of arrays other devices finished long before (the gradient
// exchange's buckets, docs/design.md). Other copies are copy_to_device_named's.
NDArray copy_to_device_sent(const NDArray& source, Device device, const char* op);
void copy_into_named(const NDArray& source, const NDArray& destination, const char* op);

}  // namespace tandem::nd::detail
