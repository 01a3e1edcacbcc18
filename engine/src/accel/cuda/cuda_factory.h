// The CUDA backend's entry points, defined in cuda_accelerator.cc, which is compiled only when
// the build has CUDA (TANDEM_HAVE_CUDA). The registry reaches them through cuda_backend().
#pragma once

#include <memory>

#include "tandem/accel/accelerator.h"
#include "tandem/engine_config.h"

namespace tandem::detail {

// The CUDA runtime's device count (CUDA_VISIBLE_DEVICES applies). Any error of
// cudaGetDeviceCount (no driver, no GPU, stub library) counts as 0 devices and is logged once.
int cuda_device_count();

// The accelerator `gpu(id)`; `id` must be below cuda_device_count(), else tandem::Error.
std::unique_ptr<Accelerator> make_cuda_accelerator(int id, const AcceleratorConfig& config);

}  // namespace tandem::detail
