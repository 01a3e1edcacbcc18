// Batch normalization in training mode on the CPU, over dense N x C x S... views (S: the
// product of the spatial axes, 1 for an N x C array); the per-channel arrays are dense vectors
// of C. Channels run in parallel, each channel serially and in order, so the bits do not depend
// on the thread count. Sums are kept in double, shifted by the channel's first element (a
// one-pass variance that stays accurate when the mean is large against the spread).
//
// batch_norm_forward: the batch's mean and biased variance per channel, y = (x - mean) *
// inv_std * gamma + beta with inv_std = 1 / sqrt(var + eps), saved_mean and saved_inv_std
// written, running_mean and running_var updated in place: r = momentum * r + (1 - momentum) *
// batch. batch_norm_backward: with xhat = (x - mean) * inv_std and M = N * S, dbeta = sum(dy),
// dgamma = sum(dy * xhat), dx = gamma * inv_std * (dy - dbeta / M - xhat * dgamma / M); an
// output with data == nullptr is not formed. Every floating view shares one dtype (float32 or
// float64); x has at least one element per channel.
#pragma once

#include "tandem/ops/array_view.h"

namespace tandem::ops::cpu {

void batch_norm_forward(const ArrayView& x, const ArrayView& gamma, const ArrayView& beta,
                        const ArrayView& running_mean, const ArrayView& running_var,
                        const ArrayView& y, const ArrayView& saved_mean,
                        const ArrayView& saved_inv_std, double momentum, double eps);
void batch_norm_backward(const ArrayView& x, const ArrayView& dy, const ArrayView& gamma,
                         const ArrayView& saved_mean, const ArrayView& saved_inv_std,
                         const ArrayView& dx, const ArrayView& dgamma, const ArrayView& dbeta);

}  // namespace tandem::ops::cpu
