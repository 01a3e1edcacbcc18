// The ring algorithm of nd::allreduce (AllreduceAlgorithm::ring in tandem/nd/multi_device.h):
// reduce-scatter then all-gather over D chunks, the copies on the receiving devices' copy
// queues, the adds on the receiving devices.
#pragma once

#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

// Whether the ring can run over `arrays` (checked for equal shapes and dtypes already): each
// array contiguous (its chunks are views of it), on a device of its own, with a copy path to
// the next array's device.
bool ring_fits(const std::vector<NDArray>& arrays);
// Throws tandem::Error naming `op` and what does not fit when ring_fits is false.
void check_ring(const char* op, const std::vector<NDArray>& arrays);

// Queues the ring over `arrays` (ring_fits holds, at least 2 arrays). Returns at once.
void ring_allreduce(const std::vector<NDArray>& arrays);

}  // namespace tandem::nd::detail
