// The checks every front-end op makes at the call, before anything is queued, so a mistake is
// reported where it was made (tandem::Error naming the op and what was wrong), not later in a
// worker.
#pragma once

#include <initializer_list>

#include "tandem/nd/ndarray.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::nd::detail {

// The array is not a null handle.
void check_defined(const char* op, const NDArray& array);

// Every input is defined, on one engine and one device; returns that engine. The error for two
// devices names both, e.g. "add: inputs are on different devices: cpu(0) and gpu(0)".
Engine& check_same_place(const char* op, std::initializer_list<const NDArray*> inputs);

// Both arrays have one dtype, e.g. "add: dtype mismatch: float32 and float64".
void check_same_dtype(const char* op, const NDArray& a, const NDArray& b);

// A value of the DType enumeration, e.g. "zeros: 99 is not a dtype (float32, ...)".
void check_dtype(const char* op, DType dtype);

// A compute type (not the storage-only uint8), e.g. "add is not defined for uint8 arrays".
void check_computable(const char* op, DType dtype);

// Floating types only, e.g. "exp is not defined for int32 arrays".
void check_floating(const char* op, DType dtype);

// The very same view: one storage, offset, dtype, shape and strides (false for an undefined
// array).
bool same_view(const NDArray& a, const NDArray& b);

// The two views may touch the same memory but are not the very same view: an element-wise
// kernel writing one while reading the other could read values it already overwrote.
bool overlaps_differently(const NDArray& a, const NDArray& b);

}  // namespace tandem::nd::detail
