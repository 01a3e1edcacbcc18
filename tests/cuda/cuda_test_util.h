// Helpers of the gpu(i) tests: skip visibly without a device, move test data to and from device
// memory, and compare with the CPU kernels.
#pragma once

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tandem/accel/accelerator.h"
#include "tandem/device.h"

namespace tandem::test {

// True when gpu(0) exists; otherwise says so where ctest output shows it.
inline bool have_cuda(const char* test) {
  if (accelerator_count(DeviceKind::cuda) > 0) return true;
  std::cout << "SKIPPED: no CUDA device (" << test << ")\n";
  MESSAGE("SKIPPED: no CUDA device");
  return false;
}

inline void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

// gpu(0)'s first compute stream, where the kernel tests run their kernels.
inline Stream& compute_stream() {
  return accelerator(cuda(0)).stream(Queue::compute, 0);
}

// `n` values drawn uniformly from [low, high) by a generator seeded with `seed`.
template <class T>
std::vector<T> sample(std::int64_t n, unsigned seed, double low = -4.0, double high = 4.0) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> value(low, high);
  std::vector<T> data(static_cast<std::size_t>(n));
  for (auto& x : data) x = static_cast<T>(value(generator));
  return data;
}

// Device memory of gpu(0), zeroed or holding a copy of `host`, freed at scope exit.
template <class T>
class DeviceBuffer {
 public:
  // Zeroed here: cudaMalloc does not clear memory, and a block that an earlier test of the same
  // process freed comes back with that test's bytes (issue 22: a capture test read such a block
  // as "the copy ran").
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    cuda_ok(cudaSetDevice(0), "cudaSetDevice");
    const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(T);
    cuda_ok(cudaMalloc(&data_, bytes), "cudaMalloc");
    cuda_ok(cudaMemset(data_, 0, bytes), "cudaMemset");
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    cuda_ok(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
            "cudaMemcpy to device");
  }
  ~DeviceBuffer() { (void)cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return static_cast<T*>(data_); }
  // Waits for the device, then copies back.
  std::vector<T> read() const {
    cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<T> host(count_);
    cuda_ok(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost),
            "cudaMemcpy to host");
    return host;
  }

 private:
  std::size_t count_;
  void* data_ = nullptr;
};

}  // namespace tandem::test
