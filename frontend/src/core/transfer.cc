#include "core/transfer.h"

#include <cstring>
#include <memory>
#include <string>

#include "autograd/tape.h"
#include "core/access.h"
#include "core/lazy_view.h"
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

// The launch functions below follow the rule for accelerator ops (docs/design.md): at launch an
// op's vars may still be written or read by device work queued earlier (a D2H op writes its host
// array in a stream host item), so the launch only resolves pointers, allocates and enqueues; every
// access to the arrays' bytes is stream work, which runs after the waits the engine enqueued for
// the op.
void push_host_to_device(const NDArray& source, const NDArray& destination, const char* op) {
  const DenseRef host = dense_ref(source), device = dense_ref(destination);
  const std::size_t bytes = byte_size(source);
  MemoryPool* pinned = &accelerator(destination.device()).pinned_pool();
  destination.engine().push(
      [host, device, bytes, pinned](RunContext& ctx) {
        void* to = device.resolve();
        const void* from = host.resolve();
        if (bytes == 0) return;
        // Pageable memory cannot be the source of an async copy: stage the host bytes in pinned
        // memory, in stream order (the host array is final only once the waits have passed).
        auto stage = std::make_shared<PinnedStage>(*pinned, bytes);
        Stream& stream = *ctx.stream();
        stream.enqueue_host([stage, from, bytes] { std::memcpy(stage->data(), from, bytes); }, {});
        stream.copy(to, stage->data(), bytes);
        stream.enqueue_host([stage = std::move(stage)] {}, {});
      },
      destination.device(), WriteReads(destination, &source).list(), {destination.var()},
      {.name = op, .queue = Queue::copy_h2d});
}

void push_device_to_host(const NDArray& source, const NDArray& destination, const char* op) {
  const DenseRef device = dense_ref(source), host = dense_ref(destination);
  const std::size_t bytes = byte_size(source);
  MemoryPool* pinned = &accelerator(source.device()).pinned_pool();
  destination.engine().push(
      [device, host, bytes, pinned](RunContext& ctx) {
        const void* from = device.resolve();
        void* to = host.resolve();
        if (bytes == 0) return;
        auto stage = std::make_shared<PinnedStage>(*pinned, bytes);
        Stream& stream = *ctx.stream();
        stream.copy(stage->data(), from, bytes);
        // In stream order, after the copy: the engine fences the destination's var with this
        // op's event, so no reader (host or device) sees the array before this has run.
        stream.enqueue_host(
            [stage = std::move(stage), to, bytes] { std::memcpy(to, stage->data(), bytes); }, {});
      },
      source.device(), WriteReads(destination, &source).list(), {destination.var()},
      {.name = op, .queue = Queue::copy_d2h});
}

void push_device_to_device(const NDArray& source, const NDArray& destination, const char* op) {
  const DenseRef from = dense_ref(source), to = dense_ref(destination);
  const std::size_t bytes = byte_size(source);
  destination.engine().push(
      [from, to, bytes](RunContext& ctx) {
        const void* src = from.resolve();
        void* dst = to.resolve();
        if (bytes > 0) ctx.stream()->copy(dst, src, bytes);
      },
      destination.device(), WriteReads(destination, &source).list(), {destination.var()},
      {.name = op, .queue = Queue::copy_d2d});
}

}  // namespace

void push_transfer(const NDArray& source, const NDArray& destination, const char* op) {
  if (!source.device().is_accelerator()) return push_host_to_device(source, destination, op);
  if (!destination.device().is_accelerator()) {
    return push_device_to_host(source, destination, op);
  }
  push_device_to_device(source, destination, op);
}

NDArray copy_to_device_named(const NDArray& source, Device device, const char* op) {
  if (device == source.device()) return source;
  if (!source.is_contiguous()) return source.detach().copyto(device);
  check_transfer(op, source.device(), device);
  NDArray out = allocate_array(source.engine(), source.shape(), source.dtype(), device, op);
  push_transfer(source, out, op);
  return out;
}

void copy_into_named(const NDArray& source, const NDArray& destination, const char* op) {
  if (source.device() == destination.device() || !source.is_contiguous() ||
      !destination.is_contiguous()) {
    source.detach().copyto(destination);
    return;
  }
  check_transfer(op, source.device(), destination.device());
  autograd::detail::note_in_place_write(op, destination, &source);
  push_transfer(source, destination, op);
}

}  // namespace tandem::nd::detail
