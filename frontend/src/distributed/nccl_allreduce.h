// nd::allreduce through NCCL (AllreduceAlgorithm::nccl in tandem/nd/multi_device.h, and what
// automatic picks on gpu devices when it can): one engine op on the first array's comm queue
// that sums every array in place (tandem/ops/collectives.h says how the sum forks to the other
// devices and joins back).
#pragma once

#include <string>
#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

// Why `arrays` (checked for equal shapes and dtypes already) cannot be summed through NCCL, or
// "" when they can: each array contiguous, on a gpu device of its own, NCCL in the build and
// loadable.
std::string nccl_unusable(const std::vector<NDArray>& arrays);

// Queues the sum over `arrays` (nccl_unusable is ""). Returns at once.
void nccl_allreduce(const std::vector<NDArray>& arrays);

}  // namespace tandem::nd::detail
