#include "cuda_memory.h"

#include <cuda_runtime_api.h>

#include "base/logging.h"
#include "cuda_check.h"

namespace tandem::detail {

namespace {

// cudaMalloc and cudaHostAlloc answer cudaErrorMemoryAllocation when memory is exhausted.
bool out_of_memory(cudaError_t status) {
  if (status != cudaErrorMemoryAllocation) return false;
  (void)cudaGetLastError();  // not sticky; clear it so later launch checks don't see it
  return true;
}

void log_free_failure(const char* call, int device, cudaError_t status) {
  (void)cudaGetLastError();
  // At exit the runtime may already be unloading (cudaErrorCudartUnloading): nothing to free.
  if (status == cudaErrorCudartUnloading) return;
  log().warn("{}", cuda_error_message(call, device, status));
}

}  // namespace

void* CudaDeviceAllocator::allocate(std::size_t bytes) {
  DeviceGuard guard(device_);
  void* data = nullptr;
  const cudaError_t status = cudaMalloc(&data, bytes);
  if (out_of_memory(status)) return nullptr;
  TANDEM_CUDA_CHECK(status, device_);
  return data;
}

void CudaDeviceAllocator::deallocate(void* data, std::size_t) noexcept {
  if (data == nullptr) return;
  try {
    DeviceGuard guard(device_);
    const cudaError_t status = cudaFree(data);
    if (status != cudaSuccess) log_free_failure("cudaFree", device_, status);
  } catch (const std::exception& e) {
    log().warn("tandem: freeing device memory of {}: {}", to_string(tandem::cuda(device_)),
               e.what());
  }
}

namespace {
thread_local bool host_callback_thread = false;
}  // namespace

bool in_host_callback() noexcept {
  return host_callback_thread;
}

HostCallbackScope::HostCallbackScope() noexcept : outer_(host_callback_thread) {
  host_callback_thread = true;
}

HostCallbackScope::~HostCallbackScope() {
  host_callback_thread = outer_;
}

CudaPinnedAllocator::~CudaPinnedAllocator() {
  free_deferred();
}

std::size_t CudaPinnedAllocator::deferred_frees() const noexcept {
  return deferred_count_.load(std::memory_order_relaxed);
}

void CudaPinnedAllocator::free_deferred() noexcept {
  DeferredBlock* block = deferred_.exchange(nullptr, std::memory_order_acquire);
  while (block != nullptr) {
    DeferredBlock* next = block->next;
    deferred_count_.fetch_sub(1, std::memory_order_relaxed);
    free_now(block);
    block = next;
  }
}

void CudaPinnedAllocator::free_now(void* data) noexcept {
  const cudaError_t status = cudaFreeHost(data);
  if (status != cudaSuccess) log_free_failure("cudaFreeHost", device_, status);
}

void* CudaPinnedAllocator::allocate(std::size_t bytes) {
  // Outside a callback (the pool never allocates in one): memory freed there comes back first.
  if (!in_host_callback()) free_deferred();
  DeviceGuard guard(device_);
  void* data = nullptr;
  // Portable: pinned for every device's context, so any gpu's copy stream may use the block.
  const cudaError_t status = cudaHostAlloc(&data, bytes, cudaHostAllocPortable);
  if (out_of_memory(status)) return nullptr;
  TANDEM_CUDA_CHECK(status, device_);
  return data;
}

void CudaPinnedAllocator::deallocate(void* data, std::size_t bytes) noexcept {
  if (data == nullptr) return;
  if (in_host_callback()) {
    if (bytes < sizeof(DeferredBlock)) {
      // Never happens with the pool (size classes are multiples of 512 bytes): too small to
      // hold the list link, so it is leaked rather than freed where CUDA is forbidden.
      log().warn("tandem: pinned block of {} bytes freed in a host callback is leaked", bytes);
      return;
    }
    auto* block = static_cast<DeferredBlock*>(data);
    block->next = deferred_.load(std::memory_order_relaxed);
    while (!deferred_.compare_exchange_weak(block->next, block, std::memory_order_release,
                                            std::memory_order_relaxed)) {
    }
    deferred_count_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  free_deferred();
  free_now(data);
}

}  // namespace tandem::detail
