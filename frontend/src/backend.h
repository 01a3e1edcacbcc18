// Which devices have a backend in this build. Today: the CPU. Accelerator backends (cuda, sim)
// plug in here with their own issue; everything above asks require_backend before it allocates
// on or pushes to a device.
#pragma once

#include "tandem/device.h"

namespace tandem::nd::detail {

// Throws tandem::Error naming `op` and the device when the device is not present.
void require_backend(Device device, const char* op);

}  // namespace tandem::nd::detail
