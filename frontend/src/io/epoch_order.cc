#include "io/epoch_order.h"

#include <numeric>
#include <random>

namespace tandem::data::detail {
namespace {

// SplitMix64's finaliser: spreads (seed, epoch) pairs that differ in one bit over the whole
// 64-bit state, so neighbouring seeds and epochs give unrelated streams.
std::uint64_t mix(std::uint64_t value) {
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

// Uniform in [0, bound) without modulo bias: draws past the last whole multiple of `bound` are
// rejected.
std::uint64_t draw_below(std::mt19937_64& generator, std::uint64_t bound) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  std::uint64_t draw = generator();
  while (draw >= limit) {
    draw = generator();
  }
  return draw % bound;
}

}  // namespace

std::vector<std::int64_t> epoch_order(std::int64_t count, bool shuffle, std::uint64_t seed,
                                      std::int64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!shuffle) {
    return order;
  }
  std::mt19937_64 generator(mix(mix(seed) ^ static_cast<std::uint64_t>(epoch)));
  for (std::size_t i = order.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(draw_below(generator, i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

}  // namespace tandem::data::detail
