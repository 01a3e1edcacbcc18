// From the runtime op tags to the functors of tandem/ops/functors.h: fn(Functor{}).
#pragma once

#include "tandem/ops/functors.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::ops::cpu {

template <class Fn>
decltype(auto) dispatch_unary(UnaryOp op, Fn&& fn) {
  using namespace functors;
  switch (op) {
    case UnaryOp::negative:
      return fn(Negative{});
    case UnaryOp::abs:
      return fn(Abs{});
    case UnaryOp::square:
      return fn(Square{});
    case UnaryOp::relu:
      return fn(Relu{});
    case UnaryOp::exp:
      return fn(Exp{});
    case UnaryOp::log:
      return fn(Log{});
    case UnaryOp::sqrt:
      return fn(Sqrt{});
    case UnaryOp::sigmoid:
      return fn(Sigmoid{});
    case UnaryOp::tanh:
      break;
  }
  return fn(Tanh{});
}

template <class Fn>
decltype(auto) dispatch_binary(BinaryOp op, Fn&& fn) {
  using namespace functors;
  switch (op) {
    case BinaryOp::add:
      return fn(Add{});
    case BinaryOp::subtract:
      return fn(Subtract{});
    case BinaryOp::multiply:
      return fn(Multiply{});
    case BinaryOp::divide:
      return fn(Divide{});
    case BinaryOp::maximum:
      return fn(Maximum{});
    case BinaryOp::minimum:
      return fn(Minimum{});
    case BinaryOp::equal:
      return fn(Equal{});
    case BinaryOp::not_equal:
      return fn(NotEqual{});
    case BinaryOp::greater:
      return fn(Greater{});
    case BinaryOp::greater_equal:
      return fn(GreaterEqual{});
    case BinaryOp::less:
      return fn(Less{});
    case BinaryOp::less_equal:
      return fn(LessEqual{});
    case BinaryOp::power:
      break;
  }
  return fn(Power{});
}

}  // namespace tandem::ops::cpu
