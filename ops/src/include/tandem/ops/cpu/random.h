// Random fills on the CPU from the counter-based Philox stream of tandem/ops/philox.h.
//
//   std::uint64_t used = random_uniform(out, 0.0, 1.0, seed, counter);  // counter += used
//
// `out` is a floating-point view (any strides; values go in its row-major order). Each call
// returns the number of Philox blocks it consumed, so the caller's generator state can advance
// its counter and the next draw continues the stream.
#pragma once

#include <cstdint>

#include "tandem/ops/array_view.h"

namespace tandem::ops::cpu {

std::uint64_t random_uniform(const ArrayView& out, double low, double high, std::uint64_t seed,
                             std::uint64_t counter);
std::uint64_t random_normal(const ArrayView& out, double mean, double stddev, std::uint64_t seed,
                            std::uint64_t counter);

}  // namespace tandem::ops::cpu
