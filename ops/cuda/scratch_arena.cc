// ScratchArena (scratch_arena.h).
#include "scratch_arena.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "tandem/accel/cuda_check.h"
#include "tandem/launch_counters.h"

namespace tandem::ops::cuda {

namespace {

// Blocks grow to a multiple of this, and at least double, so a few growths cover any mix.
constexpr std::size_t kGranule = std::size_t{1} << 20;

struct Arenas {
  std::mutex mutex;
  std::unordered_map<cudaStream_t, std::unique_ptr<ScratchArena>> by_stream;
};

}  // namespace

ScratchArena& ScratchArena::of(cudaStream_t stream) {
  // Leaked on purpose: ops may still enqueue while static destructors run.
  static Arenas* arenas = new Arenas();
  std::lock_guard lock(arenas->mutex);
  auto& arena = arenas->by_stream[stream];
  if (!arena) arena = std::make_unique<ScratchArena>();
  return *arena;
}

void* ScratchArena::acquire(std::size_t bytes, cudaStream_t stream, int device, const char* op) {
  if (held_.exchange(true, std::memory_order_acquire)) return nullptr;
  if (bytes <= capacity_) return data_;
  try {
    // Stream order: the old block is freed after the kernels already enqueued that use it.
    if (data_ != nullptr) {
      tandem::detail::check_cuda(cudaFreeAsync(data_, stream), op, device);
      data_ = nullptr;
      capacity_ = 0;
    }
    std::size_t size = std::max(bytes, 2 * capacity_);
    size = (size + kGranule - 1) / kGranule * kGranule;
    void* block = nullptr;
    tandem::detail::check_cuda(cudaMallocAsync(&block, size, stream), op, device);
    count_device_allocations();
    data_ = block;
    capacity_ = size;
    return data_;
  } catch (...) {
    release();
    throw;
  }
}

}  // namespace tandem::ops::cuda
