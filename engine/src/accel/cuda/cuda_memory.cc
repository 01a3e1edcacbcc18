#include "cuda_memory.h"

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "logging.h"

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

void* CudaPinnedAllocator::allocate(std::size_t bytes) {
  DeviceGuard guard(device_);
  void* data = nullptr;
  // Portable: pinned for every device's context, so any gpu's copy stream may use the block.
  const cudaError_t status = cudaHostAlloc(&data, bytes, cudaHostAllocPortable);
  if (out_of_memory(status)) return nullptr;
  TANDEM_CUDA_CHECK(status, device_);
  return data;
}

void CudaPinnedAllocator::deallocate(void* data, std::size_t) noexcept {
  if (data == nullptr) return;
  const cudaError_t status = cudaFreeHost(data);
  if (status != cudaSuccess) log_free_failure("cudaFreeHost", device_, status);
}

}  // namespace tandem::detail
