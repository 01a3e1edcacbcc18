// What an op asked of its device: kernel launches, library calls (cuBLAS, cuDNN, CUB) and
// device memory allocations. The profiler records them per op (profiler::OpEvent::counts) and
// sums them per op name in its table, so a test on a machine without a GPU can pin down how
// many launches a convolution makes, or that a steady training step allocates nothing.
//
// The counters are per thread: whoever enqueues device work bumps the counters of the thread
// it runs on, which is the thread running the op's body. The CUDA kernels' launch wrappers
// (ops/cuda/launch.cuh) count what they really launch; sim's host-stream adapters count the
// launches the CUDA kernels of the same op would make, so the two agree; the device memory
// pools count each block they had to get from the device (a cache miss), and the CUDA scratch
// arena each time it grows.
//
//   const tandem::LaunchCounts before = tandem::launch_counts();
//   ... enqueue work ...
//   const tandem::LaunchCounts made = tandem::launch_counts() - before;
//
// Counting is a thread-local increment, always on (one per launch, next to a launch that costs
// microseconds); the engine reads the counters around an op's body only when it is profiled.
#pragma once

#include <cstdint>

namespace tandem {

struct LaunchCounts {
  std::uint32_t kernels = 0;        // kernel launches (and memsets), or their sim model
  std::uint32_t library_calls = 0;  // cuBLAS / cuDNN / CUB calls that launch device work
  std::uint32_t allocations = 0;    // device memory obtained from the device, not a cache

  friend LaunchCounts operator-(LaunchCounts a, LaunchCounts b) {
    return {a.kernels - b.kernels, a.library_calls - b.library_calls,
            a.allocations - b.allocations};
  }
  friend LaunchCounts operator+(LaunchCounts a, LaunchCounts b) {
    return {a.kernels + b.kernels, a.library_calls + b.library_calls,
            a.allocations + b.allocations};
  }
  friend bool operator==(const LaunchCounts&, const LaunchCounts&) = default;
};

// This thread's running totals since it started (they wrap around; differences stay right).
LaunchCounts launch_counts() noexcept;

// Called by whoever enqueues the work, on the thread that enqueues it.
void count_kernel_launches(std::uint32_t n = 1) noexcept;
void count_library_calls(std::uint32_t n = 1) noexcept;
void count_device_allocations(std::uint32_t n = 1) noexcept;

}  // namespace tandem
