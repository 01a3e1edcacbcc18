// The dtype checks every backend's reductions make before they run: the output's dtype is the
// row's result dtype, and the input's dtype is one the row allows.
#pragma once

#include <string>

#include "common/functor_dispatch.h"
#include "tandem/errors.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::ops {

inline void check_reduce_dtypes(ReduceOp op, const ArrayView& in, const ArrayView& out) {
  const DType expected = result_dtype(op, in.dtype);
  if (out.dtype != expected) {
    throw Error(std::string("tandem: ") + op_name(op) + ": output must be " + dtype_name(expected) +
                ", got " + dtype_name(out.dtype));
  }
  if (!supported(op, in.dtype)) unsupported_dtype(op_name(op), in.dtype);
}

}  // namespace tandem::ops
