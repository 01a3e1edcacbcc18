// A Size2d attribute of an op record (convolution's and pooling's windows) as the graph stores
// it: [h, w].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/op_definition.h"
#include "tandem/errors.h"
#include "tandem/nd/size2d.h"

namespace tandem::nd::detail {

inline void write_size2d(OpAttrWriter& out, const char* key, const Size2d& size) {
  const std::int64_t values[2] = {size.h, size.w};
  out.integers(key, values);
}

// Throws tandem::Error naming `op` and `key` unless the attribute holds two integers.
inline Size2d read_size2d(const OpAttrReader& attrs, const char* key, const char* op) {
  const std::vector<std::int64_t> values = attrs.integers(key);
  if (values.size() != 2) {
    throw Error(std::string("tandem: ") + op + ": attribute '" + key + "' must be [h, w], got " +
                std::to_string(values.size()) + " values");
  }
  return Size2d{values[0], values[1]};
}

}  // namespace tandem::nd::detail
