// Optimizer updates in place on a gpu(i), the gpu(i) form of tandem/ops/cpu/optimizer_update.h
// (same operations per element, so the same bits: ops/ is compiled without FMA contraction):
// one grid-stride kernel per update. `stream` must be a gpu(i) compute stream.
#pragma once

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/kernels.h"

namespace tandem::ops::cuda {

void sgd_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& momentum_buffer,
                double grad_scale, double decay, double momentum, tandem::Stream& stream);
void adam_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& mean,
                 const ArrayView& var, const AdamStep& step, tandem::Stream& stream);

}  // namespace tandem::ops::cuda
