// Gradient clipping by global norm (Gluon's gluon.utils.clip_global_norm), without a sync.
//
//   loss.backward();
//   trainer.allreduce_grads();                          // data parallel: sum the copies first
//   nd::NDArray norm = nn::clip_global_norm(net.collect_params(), 5.0);
//   trainer.update(batch_size);                         // every op queued; nothing waited
//
// The global norm is sqrt(sum over arrays of sum(g^2)); every array is scaled in place by
// max_norm / max(norm, max_norm), i.e. left as it is when the norm is within max_norm. The
// norm and the scale stay on the device (0-d arrays), so the host never waits; read the
// returned norm when you want to log it. The gradients are the ones backward stored (a sum
// over the batch, before the optimizer's rescale_grad), so max_norm is in those units.
#pragma once

#include <vector>

#include "tandem/nd/ndarray.h"
#include "tandem/nn/block.h"

namespace tandem::nn {

// Clips `arrays` (floating, all on one device) together; returns the global norm before
// clipping, a 0-d array on their device. Throws tandem::Error for no arrays, an undefined or
// non-floating array, arrays on different devices, or max_norm <= 0.
nd::NDArray clip_global_norm(const std::vector<nd::NDArray>& arrays, double max_norm);

// Clips the gradients of `params` (those with a gradient), each device's copies together:
// after trainer.allreduce_grads() the copies are equal, so every device scales by the same
// factor. Returns the norm on the first device of the first parameter. Throws like the above,
// and for a parameter that is not initialized.
nd::NDArray clip_global_norm(const ParameterDict& params, double max_norm);

}  // namespace tandem::nn
