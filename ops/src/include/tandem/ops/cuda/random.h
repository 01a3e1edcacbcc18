// Random fills on a gpu(i) from the counter-based Philox stream of tandem/ops/philox.h: the
// same (seed, counter) gives the CPU's values (uniform: the same bits; normal: up to the last
// bits of the device's log/sin/cos), whatever the launch configuration. Returns the number of
// Philox blocks consumed, like the CPU forms, without waiting for the kernel.
#pragma once

#include <cstdint>

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops::cuda {

std::uint64_t random_uniform(const ArrayView& out, double low, double high, std::uint64_t seed,
                             std::uint64_t counter, tandem::Stream& stream);
std::uint64_t random_normal(const ArrayView& out, double mean, double stddev, std::uint64_t seed,
                            std::uint64_t counter, tandem::Stream& stream);

}  // namespace tandem::ops::cuda
