// Copy-like CPU kernels: copy with dtype conversion, fill, arange.
//
// `in` must have out's shape (broadcast it with broadcast_view first) and must not overlap `out`
// unless it is the very same view. Conversions from floating to integer types truncate toward
// zero and saturate at the integer's range (NaN becomes 0) instead of being undefined.
#pragma once

#include "tandem/ops/array_view.h"

namespace tandem::ops::cpu {

void copy(const ArrayView& in, const ArrayView& out);
void fill(const ArrayView& out, double value);
// out[i] = start + i * step, for the row-major index i of each element of `out`.
void arange(const ArrayView& out, double start, double step);
// out = condition != 0 ? a : b per element (views of out's shape; a, b, out of one dtype).
void where(const ArrayView& condition, const ArrayView& a, const ArrayView& b,
           const ArrayView& out);

}  // namespace tandem::ops::cpu
