// The unary element-wise ops: one functor each, and TANDEM_UNARY_OPS, the op records everything
// else is generated from (the UnaryOp enum and names in op_kinds.h, the dtype rules, the dispatch
// of every backend, the sim cost, the front end's nd:: function, its gradient, export and tests).
// Adding a differentiable unary op is a functor and a row here, and its declaration in
// tandem/nd/elementwise.h (docs/design.md, "How to add an op").
//
// A row is X(name, Functor, dtypes, flops, saves, gradient): `name` is the enumerator and the
// user-facing name; `dtypes` is `any` or `floating` (integer arrays are rejected with a clear
// error, and integer instantiations of the functor are never compiled); `flops` is the sim
// model's operations per element.
//
// `saves` and `gradient` are the op's gradient rule, which only the front end expands (ops/
// never does): `gradient` is the input's gradient, an expression of nd:: arrays in the output
// gradient `g`, the input `x` and the output `y`; `saves` lists the ones of x and y it reads,
// `()`, `(x)`, `(y)` or `(x, y)`: autograd keeps those alive until backward, and no others. A
// rule that reads one it did not list, or a row without a rule, does not compile;
// `no_gradient` marks an op without one.
//
// Functors are TANDEM_HOST_DEVICE, allocate nothing and never throw. Integer arithmetic wraps
// around (wrapping.h).
#pragma once

#include <cmath>
#include <type_traits>

#include "tandem/ops/host_device.h"
#include "tandem/ops/wrapping.h"

// clang-format off
#define TANDEM_UNARY_OPS(X)                                                    \
  X(negative, Negative, any,      1.0, (),  negative(g))                       \
  X(abs,      Abs,      any,      1.0, (x), g * ((x > 0.0) - (x < 0.0)))       \
  X(square,   Square,   any,      1.0, (x), g * x * 2.0)                       \
  X(relu,     Relu,     any,      1.0, (x), relu_backward(g, x))               \
  X(exp,      Exp,      floating, 8.0, (y), g * y)                             \
  X(log,      Log,      floating, 8.0, (x), g / x)                             \
  X(log1p,    Log1p,    floating, 8.0, (x), g / (x + 1.0))                     \
  X(sqrt,     Sqrt,     floating, 1.0, (y), g / (y * 2.0))                     \
  X(sigmoid,  Sigmoid,  floating, 8.0, (y), g * y * (1.0 - y))                 \
  X(tanh,     Tanh,     floating, 8.0, (y), g * (1.0 - square(y)))
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
// log(1 + a), accurate for small a.
struct Log1p {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a) const {
    return std::log1p(a);
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
