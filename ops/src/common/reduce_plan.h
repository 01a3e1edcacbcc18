// How the CUDA reductions along one axis choose their kernels, shared with the host-stream
// adapters (host_stream_kernels.cc), which count the launches the CUDA path makes.
//
// A dense input is (outer, length, inner) around the axis. With inner == 1 each output element
// reduces a contiguous run: one CUB segmented reduce and a finishing kernel. With inner > 1 a
// segment's elements lie `inner` apart, so CUB's block per segment would read one element per
// memory transaction; the columns kernel reads them as rows instead (a warp over 32 neighbouring
// output elements), in slices of the axis spread over the device, then a second kernel combines
// the slices in a fixed order. Views that are not dense keep the CUB path.
#pragma once

#include <cstdint>

#include "tandem/launch_counters.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops {

struct AxisSplit {
  std::int64_t outer = 1;   // the product of the dimensions before the axis
  std::int64_t length = 1;  // the axis
  std::int64_t inner = 1;   // the product of the dimensions after it
};

inline AxisSplit split_at_axis(const Shape& shape, int axis) {
  AxisSplit split;
  int d = 0;
  // Over the extents rather than shape[d]: GCC 12 at -O2 with -fsanitize=address warns
  // (-Warray-bounds, a false positive) about the indexed form.
  for (const std::int64_t extent : shape) {
    if (d < axis) {
      split.outer *= extent;
    } else if (d == axis) {
      split.length = extent;
    } else {
      split.inner *= extent;
    }
    ++d;
  }
  return split;
}

inline bool reduces_dense_columns(const ArrayView& in, int axis) {
  return in.num_elements() > 0 && in.is_contiguous() && split_at_axis(in.shape, axis).inner > 1;
}

// The launches of a CUDA reduction along `axis`: kernels, library calls.
inline LaunchCounts reduce_axis_launches(const ArrayView& in, int axis, const ArrayView& out) {
  if (out.num_elements() == 0) return {};
  return reduces_dense_columns(in, axis) ? LaunchCounts{2, 0, 0} : LaunchCounts{1, 1, 0};
}

}  // namespace tandem::ops
