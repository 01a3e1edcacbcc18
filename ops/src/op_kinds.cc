#include "tandem/ops/op_kinds.h"

namespace tandem::ops {

#define TANDEM_OP_NAME_CASE(Enum, name) \
  case Enum::name:                      \
    return #name;
#define TANDEM_UNARY_NAME(name, ...) TANDEM_OP_NAME_CASE(UnaryOp, name)
#define TANDEM_BINARY_NAME(name, ...) TANDEM_OP_NAME_CASE(BinaryOp, name)
#define TANDEM_REDUCE_NAME(name, ...) TANDEM_OP_NAME_CASE(ReduceOp, name)

const char* op_name(UnaryOp op) {
  switch (op) { TANDEM_UNARY_OPS(TANDEM_UNARY_NAME) }
  return "unary";
}

const char* op_name(BinaryOp op) {
  switch (op) { TANDEM_BINARY_OPS(TANDEM_BINARY_NAME) }
  return "binary";
}

const char* op_name(ReduceOp op) {
  switch (op) { TANDEM_REDUCE_OPS(TANDEM_REDUCE_NAME) }
  return "reduce";
}

}  // namespace tandem::ops
