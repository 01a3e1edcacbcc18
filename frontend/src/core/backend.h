// Which devices exist: the CPU, and the accelerators the registry reports (sim(i) as
// configured, cuda(i) as the CUDA runtime counts them). Everything above asks require_backend
// before it allocates on or pushes to a device.
#pragma once

#include "tandem/device.h"

namespace tandem::nd::detail {

// Throws tandem::Error naming `op` and the device when the device is not present.
void require_backend(Device device, const char* op);

}  // namespace tandem::nd::detail
