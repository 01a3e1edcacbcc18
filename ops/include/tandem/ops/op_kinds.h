// The element-wise and reduction operations by name: the tags the front end passes to a backend,
// which maps each one to its functor in tandem/ops/functors.h.
#pragma once

#include <cstdint>

namespace tandem::ops {

enum class UnaryOp : std::uint8_t {
  negative,
  abs,
  square,
  relu,
  exp,  // exp and everything after it: floating types only
  log,
  sqrt,
  sigmoid,
  tanh,
};

enum class BinaryOp : std::uint8_t {
  add,
  subtract,
  multiply,
  divide,
  maximum,
  minimum,
  equal,
  not_equal,
  greater,
  greater_equal,
  less,
  less_equal,
  power,  // floating types only
};

enum class ReduceOp : std::uint8_t {
  sum,
  mean,
  max,
  min,
  argmax,  // the result holds int64 indices
  norm,    // L2 norm; floating types only
};

// The user-facing names ("add", "exp", ...), used in error messages and op names.
const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(ReduceOp op);

constexpr bool needs_floating(UnaryOp op) {
  return op >= UnaryOp::exp;
}
constexpr bool needs_floating(BinaryOp op) {
  return op == BinaryOp::power;
}
constexpr bool needs_floating(ReduceOp op) {
  return op == ReduceOp::norm;
}

}  // namespace tandem::ops
