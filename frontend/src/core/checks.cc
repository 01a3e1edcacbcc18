#include "core/checks.h"

#include <string>

#include "core/access.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

void check_defined(const char* op, const NDArray& array) {
  if (!array.defined()) {
    throw Error(std::string("tandem: ") + op +
                ": an input is a null NDArray (default-constructed, never assigned an array)");
  }
}

Engine& check_same_place(const char* op, std::initializer_list<const NDArray*> inputs) {
  const NDArray* first = *inputs.begin();
  check_defined(op, *first);
  // One checked lookup per op (NDArray::engine() asks the var's owner whether the engine still
  // exists); the other inputs compare the engine their storage was made on with it, and only a
  // mismatch asks again, for the clearer message when that input's engine was destroyed.
  Engine& engine = first->engine();
  for (const NDArray* other : inputs) {
    check_defined(op, *other);
    if (other->device() != first->device()) {
      throw Error(std::string("tandem: ") + op + ": inputs are on different devices: " +
                  to_string(first->device()) + " and " + to_string(other->device()) +
                  ". An op's inputs must all be on one device; move one with copyto() or "
                  "as_in_context() first");
    }
    if (NDArrayAccess::storage(*other)->engine != &engine) {
      (void)other->engine();  // throws for an input whose engine was destroyed
      throw Error(std::string("tandem: ") + op +
                  ": inputs belong to different engines; create them under the same "
                  "nd::EngineScope");
    }
  }
  return engine;
}

void check_same_dtype(const char* op, const NDArray& a, const NDArray& b) {
  if (a.dtype() != b.dtype()) {
    throw Error(std::string("tandem: ") + op + ": dtype mismatch: " + dtype_name(a.dtype()) +
                " and " + dtype_name(b.dtype()) + "; convert one with astype() first");
  }
}

void check_dtype(const char* op, DType dtype) {
  if (ops::is_valid(dtype)) return;
  throw Error(
      std::string("tandem: ") + op + ": " + std::to_string(static_cast<unsigned>(dtype)) +
      " is not a dtype (float32, float64, int32, int64 or uint8: use nd::float32 and so on)");
}

void check_computable(const char* op, DType dtype) {
  check_dtype(op, dtype);
  if (ops::is_computable(dtype)) return;
  throw Error(std::string("tandem: ") + op + " is not defined for " + dtype_name(dtype) +
              " arrays (uint8 holds data only: copy, astype, save/load, print); convert with "
              "astype(nd::float32) first");
}

void check_floating(const char* op, DType dtype) {
  check_dtype(op, dtype);
  if (!ops::is_floating(dtype)) {
    throw Error(std::string("tandem: ") + op + " is not defined for " + dtype_name(dtype) +
                " arrays (floating types only); convert with astype(nd::float32) first");
  }
}

bool same_view(const NDArray& a, const NDArray& b) {
  return a.shares_storage_with(b) && NDArrayAccess::offset(a) == NDArrayAccess::offset(b) &&
         a.dtype() == b.dtype() && a.shape() == b.shape() && a.strides() == b.strides();
}

bool overlaps_differently(const NDArray& a, const NDArray& b) {
  return a.shares_storage_with(b) && !same_view(a, b);
}

}  // namespace tandem::nd::detail
