#include "tandem/ops/op_kinds.h"

namespace tandem::ops {

const char* op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::negative:
      return "negative";
    case UnaryOp::abs:
      return "abs";
    case UnaryOp::square:
      return "square";
    case UnaryOp::relu:
      return "relu";
    case UnaryOp::exp:
      return "exp";
    case UnaryOp::log:
      return "log";
    case UnaryOp::sqrt:
      return "sqrt";
    case UnaryOp::sigmoid:
      return "sigmoid";
    case UnaryOp::tanh:
      return "tanh";
  }
  return "unary";
}

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add:
      return "add";
    case BinaryOp::subtract:
      return "subtract";
    case BinaryOp::multiply:
      return "multiply";
    case BinaryOp::divide:
      return "divide";
    case BinaryOp::maximum:
      return "maximum";
    case BinaryOp::minimum:
      return "minimum";
    case BinaryOp::equal:
      return "equal";
    case BinaryOp::not_equal:
      return "not_equal";
    case BinaryOp::greater:
      return "greater";
    case BinaryOp::greater_equal:
      return "greater_equal";
    case BinaryOp::less:
      return "less";
    case BinaryOp::less_equal:
      return "less_equal";
    case BinaryOp::power:
      return "power";
  }
  return "binary";
}

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::mean:
      return "mean";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
    case ReduceOp::argmax:
      return "argmax";
    case ReduceOp::norm:
      return "norm";
  }
  return "reduce";
}

}  // namespace tandem::ops
