#include "cuda_check.h"

#include "tandem/detail/fault_injection.h"
#include "tandem/device.h"
#include "tandem/errors.h"

namespace tandem::detail {

std::string cuda_error_message(const char* call, int device, cudaError_t error) {
  return std::string("tandem: ") + call + " on " + to_string(tandem::cuda(device)) +
         " failed: " + cudaGetErrorString(error) + " (" + cudaGetErrorName(error) + ")";
}

namespace {

// Test-only (tandem/detail/fault_injection.h): a call that succeeded is reported as failed. Its
// effect stays (a cudaMalloc's block leaks): the point is the caller's error path.
void inject_call_fault(const char* call, int device) {
  if (!inject_fault(testing::FaultKind::cuda_call)) return;
  throw Error(cuda_error_message(call, device, cudaErrorUnknown) +
              injected_fault_note(testing::FaultKind::cuda_call));
}

}  // namespace

void check_cuda(cudaError_t error, const char* call, int device) {
  if (error == cudaSuccess) {
    if (faults_armed()) inject_call_fault(call, device);
    return;
  }
  // Non-sticky errors stay as the thread's last error until read: clear it here, it is
  // reported by the exception. (A sticky error keeps coming back from every call anyway.)
  (void)cudaGetLastError();
  throw Error(cuda_error_message(call, device, error));
}

void check_cublas(cublasStatus_t status, const char* call, int device) {
  if (status == CUBLAS_STATUS_SUCCESS) {
    if (faults_armed()) inject_call_fault(call, device);
    return;
  }
  throw Error(std::string("tandem: ") + call + " on " + to_string(tandem::cuda(device)) +
              " failed: " + cublasGetStatusString(status) + " (" + cublasGetStatusName(status) +
              ")");
}

DeviceGuard::DeviceGuard(int device) {
  int current = -1;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice", device);
  if (current != device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice", device);
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) {
    // Restoring a device that was valid a moment ago does not fail; nothing to report if it did.
    if (cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
  }
}

}  // namespace tandem::detail
