// Loss functions (Gluon's gluon.loss): each returns one loss per sample, shape (N), queued like
// any op; sum or mean it before backward().
//
//   nd::NDArray loss;
//   {
//     auto recording = autograd::record();
//     loss = nn::softmax_ce_loss(net(x), labels, {.label_smoothing = 0.1});
//   }
//   loss.backward();               // the gradient of loss.sum()
//
// Prediction and label have the same shape (N, ...) (softmax_ce_loss: logits (N, C)
// and N integer labels) and a floating dtype; the per-element losses are averaged over every
// axis but the first, as Gluon does. Each is composed of differentiable NDArray ops, so its
// gradient comes from autograd. Mismatched shapes or devices throw tandem::Error naming the
// loss and both shapes.
#pragma once

#include "tandem/nd/ndarray.h"

namespace tandem::nn {

// 0.5 * (pred - label)^2 (Gluon's L2Loss).
nd::NDArray l2_loss(const nd::NDArray& pred, const nd::NDArray& label);
// |pred - label|.
nd::NDArray l1_loss(const nd::NDArray& pred, const nd::NDArray& label);
// Huber (smooth L1) with threshold rho > 0: 0.5 / rho * d^2 where |d| <= rho, else
// |d| - 0.5 * rho, for d = pred - label.
nd::NDArray huber_loss(const nd::NDArray& pred, const nd::NDArray& label, double rho = 1.0);
// Binary cross entropy of sigmoid(logits) against targets in [0, 1], computed from the logits
// without overflow: max(x, 0) - x * z + log(1 + exp(-|x|)).
nd::NDArray sigmoid_bce_loss(const nd::NDArray& logits, const nd::NDArray& label);

struct SoftmaxCrossEntropyOptions {
  // eps in [0, 1): the target is (1 - eps) * one_hot(label) + eps / C, so the loss is
  // (1 - eps) * CE + eps * mean over classes of -log_softmax.
  double label_smoothing = 0.0;
};
// Cross entropy of softmax(logits) (N, C) against N integer labels, one per sample
// (nd::softmax_cross_entropy, with label smoothing; nn::softmax_cross_entropy_loss of
// tandem/nn/pipeline.h is the unsmoothed sum, the form a Pipeline's loss takes).
nd::NDArray softmax_ce_loss(const nd::NDArray& logits, const nd::NDArray& labels,
                            const SoftmaxCrossEntropyOptions& options = {});

}  // namespace tandem::nn
