// Integer arithmetic that wraps around (two's complement) instead of overflowing, which would be
// undefined behaviour; plain arithmetic for floating types. Shared by the functors, the
// reducers and gemm of every backend.
#pragma once

#include <type_traits>

#include "tandem/ops/host_device.h"

namespace tandem::ops::functors {

template <class T>
TANDEM_HOST_DEVICE constexpr T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <class T>
TANDEM_HOST_DEVICE constexpr T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}

template <class T>
TANDEM_HOST_DEVICE constexpr T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

}  // namespace tandem::ops::functors
