// The shape check every backend's gemm makes before it runs: c = a · b with a m x k, b k x n
// and c m x n.
#pragma once

#include <string>

#include "tandem/errors.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops {

inline void check_gemm_shapes(const ArrayView& a, const ArrayView& b, const ArrayView& c) {
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2 || a.shape[1] != b.shape[0] ||
      c.shape[0] != a.shape[0] || c.shape[1] != b.shape[1]) {
    throw Error(std::string("tandem: gemm: shapes ") + a.shape.to_string() + " x " +
                b.shape.to_string() + " -> " + c.shape.to_string() +
                " do not form a matrix product");
  }
}

}  // namespace tandem::ops
