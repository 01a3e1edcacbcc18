// Reductions on a gpu(i): sum, mean, max, min, argmax and the L2 norm, over a whole array or
// along one axis; the gpu(i) forms of tandem/ops/cpu/reduce.h with the same rules (double or
// int64 accumulators, NaN propagates through max/min, argmax takes the first index of the
// largest value and a NaN counts as largest). Built on CUB (DeviceReduce, DeviceSegmentedReduce)
// over strided input; temporary storage comes from cudaMallocAsync on `stream`. Floating sums
// are added in CUB's order, so they match the CPU within rounding, not bit for bit.
#pragma once

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::ops::cuda {

void reduce_all(ReduceOp op, const ArrayView& in, const ArrayView& out, tandem::Stream& stream);
void reduce_axis(ReduceOp op, const ArrayView& in, int axis, const ArrayView& out,
                 tandem::Stream& stream);

}  // namespace tandem::ops::cuda
