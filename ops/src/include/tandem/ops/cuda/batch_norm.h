// Batch normalization in training mode on a gpu(i), the gpu(i) form of
// tandem/ops/cpu/batch_norm.h (same conventions and results up to the order of the sums): two
// kernels per pass, partial sums per (channel, part of the channel's elements) into the
// stream's scratch memory, then each block combines its channel's parts in a fixed order
// (deterministic bits) and applies them. `stream` must be a gpu(i) compute stream.
#pragma once

#include "tandem/accel/stream.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops::cuda {

void batch_norm_forward(const ArrayView& x, const ArrayView& gamma, const ArrayView& beta,
                        const ArrayView& running_mean, const ArrayView& running_var,
                        const ArrayView& y, const ArrayView& saved_mean,
                        const ArrayView& saved_inv_std, double momentum, double eps,
                        tandem::Stream& stream);
void batch_norm_backward(const ArrayView& x, const ArrayView& dy, const ArrayView& gamma,
                         const ArrayView& saved_mean, const ArrayView& saved_inv_std,
                         const ArrayView& dx, const ArrayView& dgamma, const ArrayView& dbeta,
                         tandem::Stream& stream);

}  // namespace tandem::ops::cuda
