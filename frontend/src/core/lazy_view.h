// LazyView: what an op captures of an array, resolved to an ops::ArrayView when the op runs.
//
// It holds the Storage pointer rather than the data pointer, because the memory is allocated by
// the first op that runs on it (see storage.h). Holding the raw pointer is safe for as long as
// the op was pushed on the array's var.
#pragma once

#include "core/access.h"
#include "core/storage.h"
#include "tandem/ops/array_view.h"

namespace tandem::nd::detail {

struct LazyView {
  Storage* storage = nullptr;
  std::int64_t offset = 0;  // elements
  ops::ArrayView layout;    // dtype, shape, strides; data unset

  ops::ArrayView resolve() const {
    ops::ArrayView view = layout;
    view.data = static_cast<char*>(storage->data_or_allocate()) +
                offset * static_cast<std::int64_t>(ops::dtype_size(layout.dtype));
    return view;
  }
};

inline LazyView lazy_view(const NDArray& array) {
  return LazyView{NDArrayAccess::storage(array).get(), NDArrayAccess::offset(array),
                  ops::ArrayView{nullptr, array.dtype(), array.shape(), array.strides()}};
}

// The array seen with shape `to` under broadcasting.
inline LazyView lazy_broadcast(const NDArray& array, const Shape& to) {
  LazyView view = lazy_view(array);
  view.layout = ops::broadcast_view(view.layout, to);
  return view;
}

// A dense array's storage and offset: what the compact ops of dense operands capture.
struct DenseRef {
  Storage* storage = nullptr;
  std::int64_t byte_offset = 0;

  void* resolve() const { return static_cast<char*>(storage->data_or_allocate()) + byte_offset; }
};

inline DenseRef dense_ref(const NDArray& array) {
  return DenseRef{
      NDArrayAccess::storage(array).get(),
      NDArrayAccess::offset(array) * static_cast<std::int64_t>(ops::dtype_size(array.dtype()))};
}

}  // namespace tandem::nd::detail
