// SimAccelerator: a sim(i) device, the modelled accelerator that stands in for a GPU on machines
// without one. Per device: `compute_streams` compute streams, one h2d, one d2h, one peer (copy_d2d)
// and one comm stream, each a SimStream (its own CPU thread); device memory with a modelled
// capacity and pinned host memory, both behind caching MemoryPools. Kernels are the ops' CPU
// bodies, so results are real; the streams stretch them to the cost model's durations.
#pragma once

#include <memory>

#include "tandem/accel/accelerator.h"
#include "tandem/accel/backend.h"

namespace tandem::detail {

// The sim backend's row in the registry (kind DeviceKind::sim, printed "sim").
Backend sim_backend();
// The sim device that Accelerator::bind_thread last bound to the calling thread; cpu() if none.
// For tests: the launcher of sim(i) runs its ops bound to sim(i), as that of cuda(i) does.
Device sim_device_bound_to_this_thread();

}  // namespace tandem::detail
