// The records (core/op_definition.h) of the element-wise rows of tandem/ops/unary_ops.h and
// binary_ops.h, one per row and one per binary row's scalar form ("add_scalar"), generated from
// the rows: name, graph import, gradient rule (the row's expression, with the arrays its `saves`
// column lists) and example calls. elementwise.cc invokes them; nothing else names a row.
#pragma once

#include "core/op_definition.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::nd::detail {

// op(a, scalar), or op(scalar, a) when scalar_first: the attributes of a scalar form's record.
struct BinaryScalarAttrs {
  double scalar;
  bool scalar_first;
};

extern const OpDefinition kUnaryRecords[ops::kUnaryOpCount];
extern const OpDefinition kBinaryRecords[ops::kBinaryOpCount];
extern const OpDefinition kBinaryScalarRecords[ops::kBinaryOpCount];

inline const OpDefinition& record_of(ops::UnaryOp op) {
  return kUnaryRecords[static_cast<int>(op)];
}
inline const OpDefinition& record_of(ops::BinaryOp op) {
  return kBinaryRecords[static_cast<int>(op)];
}
inline const OpDefinition& scalar_record_of(ops::BinaryOp op) {
  return kBinaryScalarRecords[static_cast<int>(op)];
}

// `gradient` summed over the axes along which an array of `shape` was broadcast to it.
NDArray sum_to_shape(const NDArray& gradient, const Shape& shape);
// The same, its last reduction written into input `input`'s destination when backward offers
// one and the input was broadcast along leading axes only (a bias added to a batch); returns
// undefined then.
NDArray sum_to_shape_into(const NDArray& gradient, const Shape& shape,
                          std::vector<GradientDestination>& into, std::size_t input);

}  // namespace tandem::nd::detail
