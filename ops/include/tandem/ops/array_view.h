// ArrayView: what a kernel sees of an array: a pointer to its first element, its dtype, shape
// and strides (in elements). Views never own memory; the engine keeps the memory alive until
// every op that uses it has finished.
//
// Strides may be anything the front end produces: dense (row-major), sliced with a step,
// transposed, or 0 for a broadcast dimension. Kernels accept all of them; dense layouts take a
// fast path.
#pragma once

#include <cstdint>

#include "tandem/ops/dtype.h"
#include "tandem/ops/shape.h"

namespace tandem::ops {

struct ArrayView {
  void* data = nullptr;
  DType dtype = DType::float32;
  Shape shape;
  Strides strides{};

  int ndim() const { return shape.ndim(); }
  std::int64_t num_elements() const { return shape.num_elements(); }
  // Row-major and gap-free (dimensions of extent 1 may have any stride).
  bool is_contiguous() const;
  template <class T>
  T* typed() const {
    return static_cast<T*>(data);
  }
};

// A dense row-major view of `data`.
ArrayView contiguous_view(void* data, DType dtype, const Shape& shape);

// `view` seen with shape `to` under NumPy broadcasting: missing leading dimensions and
// dimensions of extent 1 get stride 0. `to` must be a valid broadcast target of view.shape.
ArrayView broadcast_view(const ArrayView& view, const Shape& to);

}  // namespace tandem::ops
