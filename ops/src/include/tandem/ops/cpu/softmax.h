// Softmax, log-softmax and softmax cross entropy over the rows of dense rows x classes views on
// the CPU, parallel over rows in fixed blocks (each row is computed serially, in order, so the
// bits do not depend on the thread count). Every row is shifted by its maximum first.
//
// softmax_rows: out = softmax(in) (or log_softmax when `log`); softmax_rows_backward: dx from
// the forward output y and dy. softmax_cross_entropy_rows: loss[r] = -log softmax(logits)[r,
// labels[r]] (0 for a label outside [0, classes)), and the probabilities when
// probabilities.data != nullptr; its backward: dlogits[r] = head_grad[r] * (p[r] - one_hot).
// head_grad is 1-d with any stride (0: one value broadcast). Floating views share one dtype
// (float32 or float64); labels are int32.
#pragma once

#include "tandem/ops/array_view.h"

namespace tandem::ops::cpu {

void softmax_rows(const ArrayView& in, const ArrayView& out, bool log);
void softmax_rows_backward(const ArrayView& y, const ArrayView& dy, const ArrayView& dx, bool log);
void softmax_cross_entropy_rows(const ArrayView& logits, const ArrayView& labels,
                                const ArrayView& loss, const ArrayView& probabilities);
void softmax_cross_entropy_backward(const ArrayView& probabilities, const ArrayView& labels,
                                    const ArrayView& head_grad, const ArrayView& dlogits);

}  // namespace tandem::ops::cpu
