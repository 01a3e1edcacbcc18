// The per-thread counters of tandem/launch_counters.h.
#include "tandem/launch_counters.h"

namespace tandem {

namespace {
thread_local LaunchCounts t_counts;
}  // namespace

LaunchCounts launch_counts() noexcept {
  return t_counts;
}

void count_kernel_launches(std::uint32_t n) noexcept {
  t_counts.kernels += n;
}

void count_library_calls(std::uint32_t n) noexcept {
  t_counts.library_calls += n;
}

void count_device_allocations(std::uint32_t n) noexcept {
  t_counts.allocations += n;
}

}  // namespace tandem
