// Joining arrays.
//
//   auto c = nd::concat({a, b}, 0);     // a 2x3 and b 4x3 give 6x3
//
// All inputs share device, dtype and every dimension but `axis` (tandem::Error otherwise).
#pragma once

#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

NDArray concat(const std::vector<NDArray>& arrays, int axis = 0);

}  // namespace tandem::nd
