// The records (core/op_definition.h) of the views and copies that NDArray's own methods make:
// reshape, slice, operator[] (node "index"), transposes, and the copies (copy, copyto,
// pin_memory: node "copy"; astype). Their functions live in ndarray.cc, copy.cc and views.cc and
// report with these records; their gradient rules, graph attributes and imports are in
// views.cc.
#pragma once

#include <cstdint>
#include <span>

#include "core/op_definition.h"

namespace tandem::nd::detail {

struct SliceAttrs {
  std::int64_t begin, end, step;  // clamped, as the view was taken
};
struct IndexAttrs {
  std::int64_t index;  // non-negative
};
struct TransposeAttrs {
  std::span<const int> axes;  // output axis i is input axis axes[i]
};

extern const OpDefinition kReshape;    // no attributes (the output's shape is the attribute)
extern const OpDefinition kSlice;      // SliceAttrs
extern const OpDefinition kIndex;      // IndexAttrs
extern const OpDefinition kTranspose;  // TransposeAttrs
extern const OpDefinition kCopy;       // no attributes
extern const OpDefinition kAstype;     // no attributes (the output's dtype)

}  // namespace tandem::nd::detail
