// convert<To>(from): the element conversion every kernel uses, defined for every input so that
// no cast is undefined behaviour: floating to integer truncates toward zero and saturates at the
// integer's range, NaN becomes 0.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "tandem/ops/host_device.h"

namespace tandem::ops {

template <class To, class From>
TANDEM_HOST_DEVICE constexpr To convert(From value) {
  if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (value != value) return To(0);
    // 2^(digits) is exactly representable as a float; values at or past it saturate.
    constexpr From upper = static_cast<From>(std::numeric_limits<To>::max()) + From(1);
    constexpr From lower = static_cast<From>(std::numeric_limits<To>::min());
    if (value >= upper) return std::numeric_limits<To>::max();
    if (value <= lower) return std::numeric_limits<To>::min();
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

}  // namespace tandem::ops
