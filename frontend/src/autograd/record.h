// The rules of the op forms (core/modes.h's OpForm), one function per form: the record mode
// (record_mode.cc) calls the one of each op's OpCall while recording, and each records the op's
// node when an input needs a gradient (the rules live in gradients_*.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "tandem/nd/autograd.h"
#include "tandem/nd/ndarray.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::autograd::detail {

// gradients_elementwise.cc
void record_unary(ops::UnaryOp op, const nd::NDArray& x, nd::NDArray& out);
void record_binary(ops::BinaryOp op, const nd::NDArray& a, const nd::NDArray& b, nd::NDArray& out);
void record_binary_scalar(ops::BinaryOp op, const nd::NDArray& a, double scalar, bool scalar_first,
                          nd::NDArray& out);

// gradients_reduce.cc
void record_dot(const nd::NDArray& a, const nd::NDArray& b, nd::NDArray& out);

// gradients_shape.cc: views, copies and joins.
void record_reshape(const nd::NDArray& x, nd::NDArray& out);
void record_slice(const nd::NDArray& x, std::int64_t begin, std::int64_t step, nd::NDArray& out);
void record_index(const nd::NDArray& x, std::int64_t index, nd::NDArray& out);
void record_transpose(const nd::NDArray& x, const std::vector<int>& axes, nd::NDArray& out);
// copy, copyto(device) and astype: the gradient is the output gradient converted back to the
// input's dtype and device.
void record_copy(const char* op, const nd::NDArray& x, nd::NDArray& out);
void record_concat(const std::vector<nd::NDArray>& arrays, int axis, nd::NDArray& out);

// Shared by the rules.
// `gradient` summed over the axes along which an array of `shape` was broadcast to it.
nd::NDArray sum_to_shape(const nd::NDArray& gradient, const nd::Shape& shape);

}  // namespace tandem::autograd::detail
