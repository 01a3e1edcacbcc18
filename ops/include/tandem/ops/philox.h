// Counter-based random numbers (Philox4x32-10 from Random123): the bits of block `b` of a stream
// depend only on (seed, b), so any thread or device computes any part of a draw independently
// and the same seed gives the same array everywhere, whatever the engine's order of execution.
//
// A draw of n values of type T with a distribution D uses blocks counter, counter + 1, ... of the
// stream, D::values_per_block<T> values each; block b gives values [b * vpb, (b + 1) * vpb).
#pragma once

#include <Random123/philox.h>

#include <cmath>
#include <cstdint>

#include "tandem/ops/host_device.h"

namespace tandem::ops::random {

struct PhiloxBits {
  std::uint32_t word[4];
};

TANDEM_HOST_DEVICE inline PhiloxBits philox_block(std::uint64_t seed, std::uint64_t block) {
  r123::Philox4x32 generator;
  const r123::Philox4x32::ctr_type counter = {
      {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u, 0u}};
  const r123::Philox4x32::key_type key = {
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
  const auto r = generator(counter, key);
  return PhiloxBits{{r[0], r[1], r[2], r[3]}};
}

// [0, 1) from 24 random bits (float) or 53 (double, from two words).
TANDEM_HOST_DEVICE inline float unit_float(std::uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}
TANDEM_HOST_DEVICE inline double unit_double(std::uint32_t high, std::uint32_t low) {
  const std::uint64_t bits = (static_cast<std::uint64_t>(high) << 21) ^ (low >> 11);
  return static_cast<double>(bits & ((std::uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

template <class T>
TANDEM_HOST_DEVICE inline T unit_value(const PhiloxBits& bits, int index);
template <>
TANDEM_HOST_DEVICE inline float unit_value<float>(const PhiloxBits& bits, int index) {
  return unit_float(bits.word[index]);
}
template <>
TANDEM_HOST_DEVICE inline double unit_value<double>(const PhiloxBits& bits, int index) {
  return unit_double(bits.word[2 * index], bits.word[2 * index + 1]);
}

struct UniformDistribution {
  double low = 0.0;
  double high = 1.0;

  template <class T>
  static constexpr int values_per_block = sizeof(T) == 4 ? 4 : 2;

  template <class T>
  TANDEM_HOST_DEVICE void operator()(const PhiloxBits& bits, T* out) const {
    for (int i = 0; i < values_per_block<T>; ++i) {
      out[i] = static_cast<T>(low) + static_cast<T>(high - low) * unit_value<T>(bits, i);
    }
  }
};

// Box-Muller: each pair of unit values gives two independent normal values.
struct NormalDistribution {
  double mean = 0.0;
  double stddev = 1.0;

  template <class T>
  static constexpr int values_per_block = sizeof(T) == 4 ? 4 : 2;

  template <class T>
  TANDEM_HOST_DEVICE void operator()(const PhiloxBits& bits, T* out) const {
    constexpr T two_pi = T(6.283185307179586476925286766559);
    for (int pair = 0; pair < values_per_block<T> / 2; ++pair) {
      // 1 - u lies in (0, 1], so the logarithm is finite.
      const T u1 = T(1) - unit_value<T>(bits, 2 * pair);
      const T u2 = unit_value<T>(bits, 2 * pair + 1);
      const T radius = std::sqrt(T(-2) * std::log(u1));
      out[2 * pair] =
          static_cast<T>(mean) + static_cast<T>(stddev) * radius * std::cos(two_pi * u2);
      out[2 * pair + 1] =
          static_cast<T>(mean) + static_cast<T>(stddev) * radius * std::sin(two_pi * u2);
    }
  }
};

}  // namespace tandem::ops::random
