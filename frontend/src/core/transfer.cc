#include "core/transfer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include "core/access.h"
#include "core/lazy_view.h"
#include "core/modes.h"
#include "tandem/accel/accelerator.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

void check_transfer(const char* op, Device from, Device to) {
  if (!from.is_accelerator() || !to.is_accelerator() || from.kind == to.kind) return;
  throw Error(std::string("tandem: ") + op + ": no copy path from " + to_string(from) + " to " +
              to_string(to) + " (a " + kind_name(from.kind) + " and a " + kind_name(to.kind) +
              " device share no memory or bus); copy through tandem::cpu() instead");
}

namespace {

std::size_t byte_size(const NDArray& array) {
  return static_cast<std::size_t>(array.size()) * ops::dtype_size(array.dtype());
}

// A block of an accelerator's pinned pool that the stream items of one transfer share. It goes
// back to the pool when the last item holding it is destroyed: after that item ran, or when the
// stream skipped it (work downstream of a failed wait is skipped, and a free in a skipped item
// would leak the block). Items are destroyed in stream order, so the block outlives the copy.
class PinnedStage {
 public:
  PinnedStage(MemoryPool& pool, std::size_t bytes) : pool_(pool), block_(pool.allocate(bytes)) {}
  ~PinnedStage() { pool_.free(block_); }
  PinnedStage(const PinnedStage&) = delete;
  PinnedStage& operator=(const PinnedStage&) = delete;

  void* data() const { return block_.data; }

 private:
  MemoryPool& pool_;
  MemoryBlock block_;
};

// Two pinned blocks of kStagingChunkBytes: the double buffer of a staged copy. Freed like a
// PinnedStage, when the last stream item holding them is destroyed.
class StagingBuffers {
 public:
  explicit StagingBuffers(MemoryPool& pool) : pool_(pool) {
    blocks_[0] = pool.allocate(kStagingChunkBytes);
    try {
      blocks_[1] = pool.allocate(kStagingChunkBytes);
    } catch (...) {
      pool.free(blocks_[0]);  // the first block is taken already: give it back before throwing
      throw;
    }
  }
  ~StagingBuffers() {
    pool_.free(blocks_[0]);
    pool_.free(blocks_[1]);
  }
  StagingBuffers(const StagingBuffers&) = delete;
  StagingBuffers& operator=(const StagingBuffers&) = delete;

  char* data(std::size_t chunk) const { return static_cast<char*>(blocks_[chunk % 2].data); }

 private:
  MemoryPool& pool_;
  std::array<MemoryBlock, 2> blocks_;
};

// The host side of a staged copy: pageable <-> pinned bytes, split over the cores. One thread
// moves 6-7 GB/s here, an eighth of what the bus takes from pinned memory (issue 22, H100:
// 7.2 GB/s H2D and 6.3 D2H staged with one memcpy per chunk, 54 pinned), so the chunk's memcpy,
// not the DMA, set the pace. It runs in a stream's host item (CUDA's callback thread, or a sim
// stream's thread), outside the engine's arena, so its parallel_for runs in oneTBB's default
// arena. Pieces of kHostCopyPieceBytes: small enough to spread a chunk over 16 cores.
constexpr std::size_t kHostCopyPieceBytes = std::size_t{1} << 20;

void copy_host_bytes(char* to, const char* from, std::size_t bytes) {
  if (bytes <= 2 * kHostCopyPieceBytes) {
    std::memcpy(to, from, bytes);
    return;
  }
  const std::size_t pieces = (bytes + kHostCopyPieceBytes - 1) / kHostCopyPieceBytes;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, pieces),
                    [=](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t i = range.begin(); i != range.end(); ++i) {
                        const std::size_t offset = i * kHostCopyPieceBytes;
                        std::memcpy(to + offset, from + offset,
                                    std::min(kHostCopyPieceBytes, bytes - offset));
                      }
                    });
}

// Pinned memory of the backend of `accelerator` (sim's pinned pool is plain host memory, which a
// CUDA stream must not take for pinned): a copy stream may then read or write it directly.
bool pinned_for(const NDArray& host, Device accelerator) {
  const MemoryPool* pool = NDArrayAccess::storage(host)->pinned;
  return pool != nullptr && pool->device().kind == accelerator.kind;
}

// Pageable host bytes -> device, in chunks: chunk i is copied into pinned buffer i % 2 on the
// staging stream while the copy stream moves chunk i - 1 over the bus. Events order the two
// streams: the DMA of a chunk waits for its memcpy, and the memcpy into a buffer waits (for
// order only) for the DMA that last read it. The first memcpy waits for the copy stream as it is
// at launch, so for the waits the engine enqueued there (the host array may be written by
// earlier device work). The op's event, recorded on the copy stream after the last DMA, covers
// everything; the buffers go back after it.
void stage_host_to_device(Stream& copy, Stream& staging, MemoryPool& pinned, char* to,
                          const char* from, std::size_t bytes) {
  auto buffers = std::make_shared<StagingBuffers>(pinned);
  staging.wait(copy.record());
  std::array<EventRef, 2> read_by_dma;
  for (std::size_t offset = 0, chunk = 0; offset < bytes; offset += kStagingChunkBytes, ++chunk) {
    const std::size_t n = std::min(kStagingChunkBytes, bytes - offset);
    char* buffer = buffers->data(chunk);
    if (read_by_dma[chunk % 2]) staging.wait_for_order(read_by_dma[chunk % 2]);
    staging.enqueue_host(
        [buffers, buffer, source = from + offset, n] { copy_host_bytes(buffer, source, n); }, {});
    copy.wait(staging.record());
    copy.copy(to + offset, buffer, n);
    read_by_dma[chunk % 2] = copy.record();
  }
  copy.enqueue_host([buffers = std::move(buffers)] {}, {});
}

// Device -> pageable host bytes, the mirror image: the copy stream moves chunk i into buffer
// i % 2 while the staging stream copies chunk i - 1 out to the host array. The copy stream ends
// waiting for the last memcpy, so the op's event (recorded there) covers the host array.
void stage_device_to_host(Stream& copy, Stream& staging, MemoryPool& pinned, char* to,
                          const char* from, std::size_t bytes) {
  auto buffers = std::make_shared<StagingBuffers>(pinned);
  std::array<EventRef, 2> emptied;
  EventRef last;
  for (std::size_t offset = 0, chunk = 0; offset < bytes; offset += kStagingChunkBytes, ++chunk) {
    const std::size_t n = std::min(kStagingChunkBytes, bytes - offset);
    char* buffer = buffers->data(chunk);
    if (emptied[chunk % 2]) copy.wait_for_order(emptied[chunk % 2]);
    copy.copy(buffer, from + offset, n);
    staging.wait(copy.record());
    staging.enqueue_host(
        [buffers, buffer, target = to + offset, n] { copy_host_bytes(target, buffer, n); }, {});
    last = emptied[chunk % 2] = staging.record();
  }
  copy.wait(last);
}

// The launch functions below follow the rule for accelerator ops (docs/design.md): at launch an
// op's vars may still be written or read by device work queued earlier (a D2H op writes its host
// array in a stream host item), so the launch only resolves pointers, allocates and enqueues; every
// access to the arrays' bytes is stream work, which runs after the waits the engine enqueued for
// the op.
void push_host_to_device(const NDArray& source, const NDArray& destination, const char* op) {
  const DenseRef host = dense_ref(source), device = dense_ref(destination);
  const std::size_t bytes = byte_size(source);
  Accelerator& target = accelerator(destination.device());
  MemoryPool* pinned = &target.pinned_pool();
  Stream* staging = &target.staging_stream(Queue::copy_h2d);
  const bool direct = pinned_for(source, destination.device());
  destination.engine().push(
      [host, device, bytes, pinned, staging, direct](RunContext& ctx) {
        void* to = device.resolve();
        const void* from = host.resolve();
        if (bytes == 0) return;
        Stream& stream = *ctx.stream();
        // Pinned memory is read by the copy itself, in stream order.
        if (direct) return stream.copy(to, from, bytes);
        if (bytes > kStagingChunkBytes) {
          return stage_host_to_device(stream, *staging, *pinned, static_cast<char*>(to),
                                      static_cast<const char*>(from), bytes);
        }
        // Pageable memory cannot be the source of an async copy: stage the host bytes in pinned
        // memory, in stream order (the host array is final only once the waits have passed).
        auto stage = std::make_shared<PinnedStage>(*pinned, bytes);
        stream.enqueue_host(
            [stage, from, bytes] {
              copy_host_bytes(static_cast<char*>(stage->data()), static_cast<const char*>(from),
                              bytes);
            },
            {});
        stream.copy(to, stage->data(), bytes);
        stream.enqueue_host([stage = std::move(stage)] {}, {});
      },
      destination.device(), WriteReads(destination, &source).list(), {destination.var()},
      {.name = op, .queue = Queue::copy_h2d});
}

void push_device_to_host(const NDArray& source, const NDArray& destination, const char* op) {
  const DenseRef device = dense_ref(source), host = dense_ref(destination);
  const std::size_t bytes = byte_size(source);
  Accelerator& origin = accelerator(source.device());
  MemoryPool* pinned = &origin.pinned_pool();
  Stream* staging = &origin.staging_stream(Queue::copy_d2h);
  const bool direct = pinned_for(destination, source.device());
  destination.engine().push(
      [device, host, bytes, pinned, staging, direct](RunContext& ctx) {
        const void* from = device.resolve();
        void* to = host.resolve();
        if (bytes == 0) return;
        Stream& stream = *ctx.stream();
        if (direct) return stream.copy(to, from, bytes);
        if (bytes > kStagingChunkBytes) {
          return stage_device_to_host(stream, *staging, *pinned, static_cast<char*>(to),
                                      static_cast<const char*>(from), bytes);
        }
        auto stage = std::make_shared<PinnedStage>(*pinned, bytes);
        stream.copy(stage->data(), from, bytes);
        // In stream order, after the copy: the engine fences the destination's var with this
        // op's event, so no reader (host or device) sees the array before this has run.
        stream.enqueue_host(
            [stage = std::move(stage), to, bytes] {
              copy_host_bytes(static_cast<char*>(to), static_cast<const char*>(stage->data()),
                              bytes);
            },
            {});
      },
      source.device(), WriteReads(destination, &source).list(), {destination.var()},
      {.name = op, .queue = Queue::copy_d2h});
}

// On `stream_device`'s peer-copy stream: the destination's (a copy it pulls) or the source's (a
// send, see copy_to_device_sent).
void push_device_to_device(const NDArray& source, const NDArray& destination, const char* op,
                           Device stream_device) {
  const DenseRef from = dense_ref(source), to = dense_ref(destination);
  const std::size_t bytes = byte_size(source);
  destination.engine().push(
      [from, to, bytes](RunContext& ctx) {
        const void* src = from.resolve();
        void* dst = to.resolve();
        if (bytes > 0) ctx.stream()->copy(dst, src, bytes);
      },
      stream_device, WriteReads(destination, &source).list(), {destination.var()},
      {.name = op, .queue = Queue::copy_d2d});
}

}  // namespace

MemoryPool* pinned_landing(const NDArray& source, Device device) {
  if (!source.device().is_accelerator() || device.is_accelerator()) return nullptr;
  return &accelerator(source.device()).pinned_pool();
}

void push_transfer(const NDArray& source, const NDArray& destination, const char* op) {
  if (!source.device().is_accelerator()) return push_host_to_device(source, destination, op);
  if (!destination.device().is_accelerator()) {
    return push_device_to_host(source, destination, op);
  }
  push_device_to_device(source, destination, op, destination.device());
}

NDArray copy_to_device_named(const NDArray& source, Device device, const char* op) {
  if (device == source.device()) return source;
  if (!source.is_contiguous()) return source.detach().copyto(device);
  check_transfer(op, source.device(), device);
  NDArray out = allocate_array(source.engine(), source.shape(), source.dtype(), device, op,
                               FirstWrite::by_op, pinned_landing(source, device));
  push_transfer(source, out, op);
  return out;
}

NDArray copy_to_device_sent(const NDArray& source, Device device, const char* op) {
  if (device == source.device() || !source.device().is_accelerator() || !device.is_accelerator() ||
      !source.is_contiguous()) {
    return copy_to_device_named(source, device, op);
  }
  check_transfer(op, source.device(), device);
  NDArray out = allocate_array(source.engine(), source.shape(), source.dtype(), device, op,
                               FirstWrite::by_op, nullptr);
  push_device_to_device(source, out, op, source.device());
  return out;
}

void copy_into_named(const NDArray& source, const NDArray& destination, const char* op) {
  if (source.device() == destination.device() || !source.is_contiguous() ||
      !destination.is_contiguous()) {
    source.detach().copyto(destination);
    return;
  }
  check_transfer(op, source.device(), destination.device());
  detail::note_in_place_write(op, destination, &source);
  push_transfer(source, destination, op);
}

}  // namespace tandem::nd::detail
