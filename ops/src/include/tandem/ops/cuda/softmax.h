// Softmax, log-softmax and softmax cross entropy over the rows of dense rows x classes views on
// a gpu(i), the gpu(i) form of tandem/ops/cpu/softmax.h (same conventions): a warp per row of
// up to 1024 classes (held in registers, reduced with shuffles), a block per longer row. `stream`
// must be a gpu(i) compute stream.
#pragma once

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops::cuda {

void softmax_rows(const ArrayView& in, const ArrayView& out, bool log, tandem::Stream& stream);
void softmax_rows_backward(const ArrayView& y, const ArrayView& dy, const ArrayView& dx, bool log,
                           tandem::Stream& stream);
void softmax_cross_entropy_rows(const ArrayView& logits, const ArrayView& labels,
                                const ArrayView& loss, const ArrayView& probabilities,
                                tandem::Stream& stream);
void softmax_cross_entropy_backward(const ArrayView& probabilities, const ArrayView& labels,
                                    const ArrayView& head_grad, const ArrayView& dlogits,
                                    tandem::Stream& stream);

}  // namespace tandem::ops::cuda
