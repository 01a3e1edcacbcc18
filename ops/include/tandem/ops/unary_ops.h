// The unary element-wise ops: one functor each, and TANDEM_UNARY_OPS, the list everything else
// is generated from (the UnaryOp enum and names in op_kinds.h, the dtype rules, the dispatch of
// every backend, the sim cost). Adding a unary op is a functor and a row here, then its nd::
// function (docs/design.md, "How to add an op").
//
// A row is X(name, Functor, dtypes, flops): `name` is the enumerator and the user-facing name;
// `dtypes` is `any` or `floating` (integer arrays are rejected with a clear error, and integer
// instantiations of the functor are never compiled); `flops` is the sim model's operations per
// element.
//
// Functors are TANDEM_HOST_DEVICE, allocate nothing and never throw. Integer arithmetic wraps
// around (wrapping.h).
#pragma once

#include <cmath>
#include <type_traits>

#include "tandem/ops/host_device.h"
#include "tandem/ops/wrapping.h"

// clang-format off
#define TANDEM_UNARY_OPS(X)              \
  X(negative, Negative, any,      1.0)   \
  X(abs,      Abs,      any,      1.0)   \
  X(square,   Square,   any,      1.0)   \
  X(relu,     Relu,     any,      1.0)   \
  X(exp,      Exp,      floating, 8.0)   \
  X(log,      Log,      floating, 8.0)   \
  X(sqrt,     Sqrt,     floating, 1.0)   \
  X(sigmoid,  Sigmoid,  floating, 8.0)   \
  X(tanh,     Tanh,     floating, 8.0)
// clang-format on

namespace tandem::ops::functors {

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
