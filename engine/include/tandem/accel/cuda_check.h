// Checking CUDA runtime and cuBLAS return codes: every CUDA call of tandem (the engine's gpu
// backend and the gpu kernels of tandem_ops) goes through check_cuda / check_cublas, which turn
// a failure into a tandem::Error naming the call, the device and the runtime's description of
// the error. Only for code built with CUDA (the build defines TANDEM_HAVE_CUDA).
//
//   TANDEM_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream), device);
//   tandem::detail::check_cuda(cudaGetLastError(), "scale<<<...>>>", device);
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace tandem::detail {

// "cudaMemcpyAsync on gpu(0) failed: out of memory (cudaErrorMemoryAllocation)".
std::string cuda_error_message(const char* call, int device, cudaError_t error);

// Throws tandem::Error unless `error` is cudaSuccess. The runtime also keeps the error as the
// thread's "last error"; it is cleared here so that a later cudaGetLastError after a kernel
// launch does not report this failure a second time.
void check_cuda(cudaError_t error, const char* call, int device);
void check_cublas(cublasStatus_t status, const char* call, int device);

// Makes `device` current for the lifetime of the guard and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace tandem::detail

#define TANDEM_CUDA_CHECK(call, device) ::tandem::detail::check_cuda((call), #call, (device))
#define TANDEM_CUBLAS_CHECK(call, device) ::tandem::detail::check_cublas((call), #call, (device))
