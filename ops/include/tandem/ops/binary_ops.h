// The binary element-wise ops: one functor each, and TANDEM_BINARY_OPS, the op records everything
// else is generated from (the BinaryOp enum and names in op_kinds.h, the dtype rules, the
// dispatch of every backend, the sim cost, the front end's nd:: function, its gradient, export
// and tests). Adding a binary op is a functor and a row here, and its declaration in
// tandem/nd/elementwise.h (docs/design.md, "How to add an op").
//
// A row is X(name, Functor, dtypes, flops, saves_a, gradient_a, saves_b, gradient_b), as in
// unary_ops.h, with one rule per input: `gradient_a` and `gradient_b` are expressions in the
// output gradient `g`, the inputs `a`, `b` and the output `y`, and each one's `saves` lists
// what it reads (kept only when that input needs a gradient). The rules of a broadcast input
// are summed back to its shape by the front end. With a scalar operand, op(a, scalar) uses
// gradient_a with b the scalar and op(scalar, b) gradient_b with a the scalar, so each rule
// is written with nd:: functions that take an array or a double on either side.
//
// Integer division truncates toward zero like C++ and yields 0 for a zero divisor (the backends
// report a zero divisor as an error before the result is observable). Comparisons return 1 or 0
// in the element type, as MXNet does.
#pragma once

#include <cmath>
#include <type_traits>

#include "tandem/ops/host_device.h"
#include "tandem/ops/wrapping.h"

// clang-format off
#define TANDEM_BINARY_OPS(X)                                                                    \
  X(add,           Add,          any,      1.0, (),     g,                                      \
                                                (),     g)                                      \
  X(subtract,      Subtract,     any,      1.0, (),     g,                                      \
                                                (),     negative(g))                            \
  X(multiply,      Multiply,     any,      1.0, (b),    g * b,                                  \
                                                (a),    g * a)                                  \
  X(divide,        Divide,       any,      1.0, (b),    g / b,                                  \
                                                (b, y), negative(g * y / b))                    \
  /* Ties go to the first input. */                                                             \
  X(maximum,       Maximum,      any,      1.0, (a, b), g * (a >= b),                           \
                                                (a, b), g * (1.0 - (b <= a)))                   \
  X(minimum,       Minimum,      any,      1.0, (a, b), g * (a <= b),                           \
                                                (a, b), g * (1.0 - (b >= a)))                   \
  X(equal,         Equal,        any,      1.0, (), no_gradient, (), no_gradient)               \
  X(not_equal,     NotEqual,     any,      1.0, (), no_gradient, (), no_gradient)               \
  X(greater,       Greater,      any,      1.0, (), no_gradient, (), no_gradient)               \
  X(greater_equal, GreaterEqual, any,      1.0, (), no_gradient, (), no_gradient)               \
  X(less,          Less,         any,      1.0, (), no_gradient, (), no_gradient)               \
  X(less_equal,    LessEqual,    any,      1.0, (), no_gradient, (), no_gradient)               \
  X(power,         Power,        floating, 8.0, (a, b), g * b * power(a, b - 1.0),              \
                                                (a, b, y), g * y * log(a))                      \
  /* relu's gradient in one pass: a where b > 0, else 0 (a * (b > 0), bit for bit). */          \
  X(relu_backward, ReluBackward, any,      1.0, (b),    g * (b > 0.0),                          \
                                                (),     g * 0.0)
// clang-format on

namespace tandem::ops::functors {

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
struct Power {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return std::pow(a, b);
  }
};
struct ReluBackward {
  template <class T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    return wrapping_mul(a, b > T(0) ? T(1) : T(0));
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

}  // namespace tandem::ops::functors
