// From the runtime op tags to the functors of the op lists (unary_ops.h, binary_ops.h):
// dispatch_unary(op, fn) calls fn(Functor{}). Shared by the CPU and CUDA kernels; a value
// outside the enumeration is a tandem::Error.
#pragma once

#include <string>

#include "tandem/errors.h"
#include "tandem/ops/dtype.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::ops {

[[noreturn]] inline void unknown_op(const char* family, int value) {
  throw Error(std::string("tandem: unknown ") + family + " op " + std::to_string(value) +
              " (not a row of its op list)");
}

// The error for an op applied to an element type its row excludes.
[[noreturn]] inline void unsupported_dtype(const char* op, DType dtype) {
  throw Error(std::string("tandem: ") + op + " is not defined for " + dtype_name(dtype) +
              " arrays (floating types only)");
}

template <class Fn>
decltype(auto) dispatch_unary(UnaryOp op, Fn&& fn) {
#define TANDEM_UNARY_CASE(name, Functor, ...) \
  case UnaryOp::name:                         \
    return fn(functors::Functor{});
  switch (op) { TANDEM_UNARY_OPS(TANDEM_UNARY_CASE) }
#undef TANDEM_UNARY_CASE
  unknown_op("unary", static_cast<int>(op));
}

template <class Fn>
decltype(auto) dispatch_binary(BinaryOp op, Fn&& fn) {
#define TANDEM_BINARY_CASE(name, Functor, ...) \
  case BinaryOp::name:                         \
    return fn(functors::Functor{});
  switch (op) { TANDEM_BINARY_OPS(TANDEM_BINARY_CASE) }
#undef TANDEM_BINARY_CASE
  unknown_op("binary", static_cast<int>(op));
}

}  // namespace tandem::ops
