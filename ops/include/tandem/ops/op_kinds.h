// The element-wise and reduction operations by name: the tags the front end passes to a backend.
// Everything here is generated from the op lists (unary_ops.h, binary_ops.h, reduce_ops.h): the
// enums, the user-facing names, the dtype rules and the sim model's cost per element.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tandem/ops/binary_ops.h"
#include "tandem/ops/dtype.h"
#include "tandem/ops/reduce_ops.h"
#include "tandem/ops/unary_ops.h"

namespace tandem::ops {

// Which element types an op is defined on (the `dtypes` column of a list).
enum class DTypeRule : std::uint8_t { any, floating };
// A reduction's result dtype (the `result` column of TANDEM_REDUCE_OPS).
enum class ReduceResult : std::uint8_t { same, int64 };

#define TANDEM_OP_ENUMERATOR(name, ...) name,
enum class UnaryOp : std::uint8_t { TANDEM_UNARY_OPS(TANDEM_OP_ENUMERATOR) };
enum class BinaryOp : std::uint8_t { TANDEM_BINARY_OPS(TANDEM_OP_ENUMERATOR) };
enum class ReduceOp : std::uint8_t { TANDEM_REDUCE_OPS(TANDEM_OP_ENUMERATOR) };
#undef TANDEM_OP_ENUMERATOR

#define TANDEM_OP_COUNT(...) +1
inline constexpr int kUnaryOpCount = 0 TANDEM_UNARY_OPS(TANDEM_OP_COUNT);
inline constexpr int kBinaryOpCount = 0 TANDEM_BINARY_OPS(TANDEM_OP_COUNT);
inline constexpr int kReduceOpCount = 0 TANDEM_REDUCE_OPS(TANDEM_OP_COUNT);
#undef TANDEM_OP_COUNT

// The user-facing names ("add", "exp", ...), used in error messages and op names; "unary",
// "binary" or "reduce" for a value outside the enumeration.
const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(ReduceOp op);

namespace detail {
#define TANDEM_OP_FLOATING(name, Functor, dtypes, ...) \
  || (std::is_same_v<F, functors::Functor> && DTypeRule::dtypes == DTypeRule::floating)
// True for the functor of an op whose row says `floating`.
template <class F>
inline constexpr bool floating_only_functor = false TANDEM_UNARY_OPS(TANDEM_OP_FLOATING)
    TANDEM_BINARY_OPS(TANDEM_OP_FLOATING);
#undef TANDEM_OP_FLOATING
}  // namespace detail

// Whether the functor F is defined on element type T: backends instantiate only these, and
// report the others with unsupported_dtype's error.
template <class T, class F>
constexpr bool functor_defined_for() {
  return std::is_floating_point_v<T> || !detail::floating_only_functor<F>;
}

#define TANDEM_OP_RULE_CASE(Enum, name, dtypes) \
  case Enum::name:                              \
    return DTypeRule::dtypes;
#define TANDEM_UNARY_RULE(name, Functor, dtypes, ...) TANDEM_OP_RULE_CASE(UnaryOp, name, dtypes)
#define TANDEM_BINARY_RULE(name, Functor, dtypes, ...) TANDEM_OP_RULE_CASE(BinaryOp, name, dtypes)
#define TANDEM_REDUCE_RULE(name, dtypes, ...) TANDEM_OP_RULE_CASE(ReduceOp, name, dtypes)
constexpr DTypeRule dtype_rule(UnaryOp op) {
  switch (op) { TANDEM_UNARY_OPS(TANDEM_UNARY_RULE) }
  return DTypeRule::any;
}
constexpr DTypeRule dtype_rule(BinaryOp op) {
  switch (op) { TANDEM_BINARY_OPS(TANDEM_BINARY_RULE) }
  return DTypeRule::any;
}
constexpr DTypeRule dtype_rule(ReduceOp op) {
  switch (op) { TANDEM_REDUCE_OPS(TANDEM_REDUCE_RULE) }
  return DTypeRule::any;
}
#undef TANDEM_UNARY_RULE
#undef TANDEM_BINARY_RULE
#undef TANDEM_REDUCE_RULE
#undef TANDEM_OP_RULE_CASE

template <class Op>
constexpr bool needs_floating(Op op) {
  return dtype_rule(op) == DTypeRule::floating;
}

// Whether `op` is defined on `dtype` arrays.
template <class Op>
constexpr bool supported(Op op, DType dtype) {
  return !needs_floating(op) || is_floating(dtype);
}

// The sim model's arithmetic operations per element (the `flops` column).
#define TANDEM_OP_FLOPS_CASE(Enum, name, flops) \
  case Enum::name:                              \
    return flops;
#define TANDEM_UNARY_FLOPS(name, Functor, dtypes, flops, ...) \
  TANDEM_OP_FLOPS_CASE(UnaryOp, name, flops)
#define TANDEM_BINARY_FLOPS(name, Functor, dtypes, flops, ...) \
  TANDEM_OP_FLOPS_CASE(BinaryOp, name, flops)
constexpr double flops_per_element(UnaryOp op) {
  switch (op) { TANDEM_UNARY_OPS(TANDEM_UNARY_FLOPS) }
  return 1.0;
}
constexpr double flops_per_element(BinaryOp op) {
  switch (op) { TANDEM_BINARY_OPS(TANDEM_BINARY_FLOPS) }
  return 1.0;
}
#undef TANDEM_UNARY_FLOPS
#undef TANDEM_BINARY_FLOPS
#undef TANDEM_OP_FLOPS_CASE

// The dtype of a reduction's result for an input of `input` (the `result` column).
constexpr DType result_dtype(ReduceOp op, DType input) {
#define TANDEM_REDUCE_RESULT(name, dtypes, result, ...) \
  case ReduceOp::name:                                  \
    return ReduceResult::result == ReduceResult::int64 ? DType::int64 : input;
  switch (op) { TANDEM_REDUCE_OPS(TANDEM_REDUCE_RESULT) }
#undef TANDEM_REDUCE_RESULT
  return input;
}

// Whether zero elements reduce to a value (the `empty_ok` column).
constexpr bool reduces_empty(ReduceOp op) {
#define TANDEM_REDUCE_EMPTY(name, dtypes, result, empty_ok) \
  case ReduceOp::name:                                      \
    return empty_ok;
  switch (op) { TANDEM_REDUCE_OPS(TANDEM_REDUCE_EMPTY) }
#undef TANDEM_REDUCE_EMPTY
  return false;
}

}  // namespace tandem::ops
