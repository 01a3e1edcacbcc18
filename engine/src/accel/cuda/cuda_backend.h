// The CUDA backend's row in the accelerator registry: kind DeviceKind::cuda, printed "gpu" (the
// spelling MXNet users know). Compiled into every build: without CUDA the row is still there
// and counts 0 devices, so gpu(i) parses and prints and its absence is a clear error.
#pragma once

#include "tandem/accel/backend.h"

namespace tandem::detail {

Backend cuda_backend();

}  // namespace tandem::detail
