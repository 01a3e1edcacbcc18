// How many blocks of host memory arrays have taken so far (every host allocation of an array's
// memory past its inline bytes, cached or not). For tests and benchmarks that check that a
// loop allocates nothing, such as the replays of a hybridized function.
#pragma once

#include <cstdint>

namespace tandem::nd::detail {

std::uint64_t host_allocation_count() noexcept;

}  // namespace tandem::nd::detail
