// NDArrayAccess: how the front end's own files build and take apart NDArray handles. Not part of
// the public API.
#pragma once

#include "storage.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

struct NDArrayAccess {
  static NDArray make(StorageRef storage, DType dtype, const Shape& shape, const Strides& strides,
                      std::int64_t offset) {
    NDArray array;
    array.storage_ = std::move(storage);
    array.dtype_ = dtype;
    array.shape_ = shape;
    array.strides_ = strides;
    array.offset_ = offset;
    return array;
  }
  static const StorageRef& storage(const NDArray& array) { return array.storage_; }
  static std::int64_t offset(const NDArray& array) { return array.offset_; }
};

// A new dense array on `engine`: checks the shape's size (naming `op`), allocates, gives it a var.
NDArray allocate_array(Engine& engine, const Shape& shape, DType dtype, Device device,
                       const char* op);

}  // namespace tandem::nd::detail
