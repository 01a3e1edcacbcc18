// How arrays of an accelerator kind cross processes (tandem::dist): a capability of the kind's
// backend, so that the front end asks it instead of naming a backend.
//
//   if (tandem::process_transport(x.device().kind) == tandem::ProcessTransport::nccl) ...
#pragma once

#include "tandem/device.h"

namespace tandem {

enum class ProcessTransport : unsigned char {
  host,  // copied to the cpu and sent through MPI (the cpu, sim, and kinds made at run time)
  nccl,  // device to device through NCCL: the kind's memory is what NCCL reads and writes (gpu)
};

// The transport of `kind`'s arrays. Declared by the gpu backend (engine/src/accel/cuda/) for
// its kind, with or without CUDA in the build (NCCL then says why it cannot run).
ProcessTransport process_transport(DeviceKind kind);

}  // namespace tandem
