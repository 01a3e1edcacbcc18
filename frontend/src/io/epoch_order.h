// The order in which one epoch visits the samples of a data set: 0..n-1, or a permutation that
// depends on (seed, epoch) alone.
//
// Reproducible everywhere: std::mt19937_64's output is fixed by the C++ standard, and the
// bounded draws and the Fisher-Yates shuffle are written here (std::shuffle and
// std::uniform_int_distribution may differ between standard libraries).
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::data::detail {

// 0..count-1, shuffled when `shuffle` is true.
std::vector<std::int64_t> epoch_order(std::int64_t count, bool shuffle, std::uint64_t seed,
                                      std::int64_t epoch);

}  // namespace tandem::data::detail
