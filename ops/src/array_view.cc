#include "tandem/ops/array_view.h"

#include <string>

#include "tandem/errors.h"

namespace tandem::ops {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
    case DType::uint8:
      return "uint8";
  }
  return "unknown";
}

void throw_not_computable(DType dtype) {
  throw Error(std::string("tandem: a compute kernel was given a ") + dtype_name(dtype) +
              " array; uint8 arrays hold data only (convert with astype(nd::float32) first)");
}

bool ArrayView::is_contiguous() const {
  std::int64_t expected = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    const std::int64_t dim = shape[i];
    if (dim == 0) return true;
    if (dim != 1 && strides[static_cast<std::size_t>(i)] != expected) return false;
    expected *= dim;
  }
  return true;
}

ArrayView contiguous_view(void* data, DType dtype, const Shape& shape) {
  return ArrayView{data, dtype, shape, contiguous_strides(shape)};
}

ArrayView broadcast_view(const ArrayView& view, const Shape& to) {
  ArrayView out{view.data, view.dtype, to, {}};
  const int pad = to.ndim() - view.ndim();
  for (int i = 0; i < to.ndim(); ++i) {
    const int source = i - pad;
    const bool stretched = source < 0 || view.shape[source] != to[i];
    out.strides[static_cast<std::size_t>(i)] =
        stretched ? 0 : view.strides[static_cast<std::size_t>(source)];
  }
  return out;
}

}  // namespace tandem::ops
