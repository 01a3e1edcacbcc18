// The dtype checks of the kernels defined for floating types only (softmax, pooling,
// convolution), shared by the CPU and CUDA backends so both name a wrong dtype the same way.
#pragma once

#include <string>
#include <type_traits>

#include "tandem/errors.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/dtype.h"

namespace tandem::ops {

// Calls fn(T{}) with T the C++ type of `dtype` (float or double); an integer dtype is a
// tandem::Error naming `op`, thrown before fn runs. fn is instantiated for floating types
// only, so its body may use what integers lack (std::exp, NaN tests).
template <class Fn>
void dispatch_floating(DType dtype, const char* op, Fn&& fn) {
  dispatch_dtype(dtype, [&]<class T>(T) {
    if constexpr (std::is_floating_point_v<T>) {
      fn(T{});
    } else {
      throw Error(std::string("tandem: ") + op + ": takes float32 or float64 arrays, got " +
                  dtype_name(dtype));
    }
  });
}

// Class labels (cross-entropy) are int32 indices, whatever the logits' dtype.
inline void check_int32_labels(const char* op, const ArrayView& labels) {
  if (labels.dtype != DType::int32) {
    throw Error(std::string("tandem: ") + op + ": labels must be int32, got " +
                dtype_name(labels.dtype));
  }
}

}  // namespace tandem::ops
