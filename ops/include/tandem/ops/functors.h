// The element-wise math, one functor per operation, written once for every device: the CPU
// backend runs them in a oneTBB parallel_for, the accelerator backends in a grid-stride loop.
// They are TANDEM_HOST_DEVICE, allocate nothing and never throw.
//
// Integer arithmetic wraps around (two's complement) instead of overflowing, which would be
// undefined behaviour; integer division truncates toward zero like C++ and yields 0 for a zero
// divisor (the CPU driver reports a zero divisor as an error before running the functor).
// Comparisons return 1 or 0 in the element type, as MXNet does.
#pragma once

#include <cmath>
#include <limits>
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

struct Add {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return wrapping_add(a, b);
  }
};
struct Subtract {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return wrapping_sub(a, b);
  }
};
struct Multiply {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return wrapping_mul(a, b);
  }
};
struct Divide {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);
      if (b == T(-1)) return wrapping_sub(T(0), a);  // min / -1 overflows
    }
    return a / b;
  }
};
struct Maximum {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};
struct Minimum {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct Power {  // floating types only
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return std::pow(a, b);
  }
};
struct Equal {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return a == b ? T(1) : T(0);
  }
};
struct NotEqual {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return a != b ? T(1) : T(0);
  }
};
struct Greater {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return a > b ? T(1) : T(0);
  }
};
struct GreaterEqual {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return a >= b ? T(1) : T(0);
  }
};
struct Less {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return a < b ? T(1) : T(0);
  }
};
struct LessEqual {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return a <= b ? T(1) : T(0);
  }
};

struct Negative {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return wrapping_sub(T(0), a);
  }
};
struct Abs {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    if constexpr (std::is_integral_v<T>) {
      return a < 0 ? wrapping_sub(T(0), a) : a;
    } else {
      return std::fabs(a);
    }
  }
};
struct Square {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return wrapping_mul(a, a);
  }
};
struct Relu {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return a > T(0) ? a : T(0);
  }
};
// The ones below are for floating types only (the front end rejects integer arrays).
struct Exp {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return std::exp(a);
  }
};
struct Log {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return std::log(a);
  }
};
struct Sqrt {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return std::sqrt(a);
  }
};
struct Sigmoid {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return T(1) / (T(1) + std::exp(-a));
  }
};
struct Tanh {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return std::tanh(a);
  }
};

}  // namespace tandem::ops::functors
