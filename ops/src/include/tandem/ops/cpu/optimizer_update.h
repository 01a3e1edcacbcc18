// Optimizer updates in place on the CPU (kernels.h's sgd_update and adam_update rows say what
// they compute): one pass over dense views of one shape and floating dtype, in parallel blocks;
// every element is computed with the operations of the unfused element-wise ops, in their order
// and dtype, so the bits are those of nn::SGD's and nn::Adam's op-by-op updates.
#pragma once

#include "tandem/ops/array_view.h"
#include "tandem/ops/kernels.h"

namespace tandem::ops::cpu {

void sgd_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& momentum_buffer,
                double grad_scale, double decay, double momentum);
void adam_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& mean,
                 const ArrayView& var, const AdamStep& step);

}  // namespace tandem::ops::cpu
