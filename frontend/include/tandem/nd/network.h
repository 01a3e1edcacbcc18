// The operators networks are built from, each with its gradient (see tandem/nd/autograd.h).
//
//   auto h = nd::relu(nd::linear(nd::flatten(x), w1, b1));  // x . w1^T + b1
//   h = nd::dropout(h, 0.5, step);                        // identity unless is_training()
//   auto loss = nd::softmax_cross_entropy(nd::dot(h, w2) + b2, labels);   // one per sample
//   auto acc = nd::accuracy(logits, labels);              // 0-d; read it when you want
//
// Like every op, each returns at once; none waits. Inputs share an engine and device (the
// current engine's, see nd::EngineScope, for the ops that create arrays: one_hot, dropout);
// mistakes the call can see throw tandem::Error naming the op, the shapes and what to do.
// Labels are integer arrays of class indices in [0, classes); a label outside that range has
// an all-zero one-hot row (its cross entropy is 0 and it never counts as correct).
#pragma once

#include <cstdint>

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

// exp(x) / sum(exp(x)) along `axis`, computed after subtracting the maximum (no overflow).
NDArray softmax(const NDArray& x, int axis = -1);
// x - log(sum(exp(x))) along `axis`, stable the same way.
NDArray log_softmax(const NDArray& x, int axis = -1);

// labels (integer, any shape S) -> shape S x depth of `dtype`: 1 at each label's index, else 0.
// Not differentiable.
NDArray one_hot(const NDArray& labels, std::int64_t depth, DType dtype = float32);

// Cross entropy of softmax(logits) against integer labels: logits N x C (floating point),
// labels of N integers; the result holds N losses (-log softmax(logits)[i, labels[i]]),
// computed through log_softmax. Its gradient is (softmax(logits) - one_hot(labels)) times the
// loss gradient: one fused rule, no exp of large numbers. A label outside [0, C) (-1, say) is
// ignored, as PyTorch's ignore_index: its loss and its row's gradient are 0.
NDArray softmax_cross_entropy(const NDArray& logits, const NDArray& labels);

// The fraction of rows of logits (N x C) whose largest entry is at the label's index, as a 0-d
// float32 array on the logits' device (no sync: read it with scalar() when needed). Not
// differentiable.
NDArray accuracy(const NDArray& logits, const NDArray& labels);

// x . weight^T + bias (PyTorch's linear, MXNet's FullyConnected): x is N x K, weight U x K,
// bias U (undefined: no bias); the result is N x U. One op, where dot(x, weight.T()) + bias is
// two, with the same values bit for bit and the same gradients (the weight's and the bias's go
// straight into their gradient buffers); an exported graph holds it as the dot and the add.
NDArray linear(const NDArray& x, const NDArray& weight, const NDArray& bias);

// N x (everything else): keeps axis 0 (a view when x is contiguous).
NDArray flatten(const NDArray& x);

// In training (autograd::is_training()), zeroes each element with probability p and scales the
// others by 1 / (1 - p); otherwise returns x. The mask is drawn from Philox with `seed` (the
// same seed gives the same mask on every engine and device); use a new seed per step, e.g. the
// step number. 0 <= p < 1.
NDArray dropout(const NDArray& x, double p, std::uint64_t seed);
// The same, drawing from the current engine's default generator (nd::random::seed).
NDArray dropout(const NDArray& x, double p);

// Batch normalization over every axis but axis 1 (the channels): x is N x C x ..., gamma,
// beta, running_mean and running_var have C elements. In training (autograd::is_training())
// it normalizes with the batch's mean and (biased) variance and updates running_mean and
// running_var in place (ops queued behind the forward, not recorded); otherwise it uses the
// running statistics. running = momentum * running + (1 - momentum) * batch statistic; eps is
// added to the variance. Gradients flow to x, gamma and beta.
NDArray batch_norm(const NDArray& x, const NDArray& gamma, const NDArray& beta,
                   const NDArray& running_mean, const NDArray& running_var, double momentum = 0.9,
                   double eps = 1e-5);

}  // namespace tandem::nd
