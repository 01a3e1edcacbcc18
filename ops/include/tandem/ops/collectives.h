// Sums across devices through the vendor's collective library: NCCL for gpu(i) arrays. The
// front end's nd::allreduce and nn::GradientExchange use it on gpu devices when it is usable and
// fall back to their copy-based algorithms otherwise.
//
// NCCL is optional. A build compiles this path when it finds nccl.h (the CUDA toolkit's include
// folder is searched; the build defines TANDEM_HAVE_NCCL); the library itself (libnccl.so.2) is
// loaded on first use, so a process that never sums across GPUs does not load its ~200 MB and a
// machine without it falls back instead of failing to start.
//
// How a sum runs: the op that calls collective_sum runs on the first device's stream, after the
// engine's waits for every buffer. The sum forks from that stream: one private NCCL stream per
// device waits for an event recorded there, the ncclAllReduce calls of all devices go out in one
// group on those streams, and the op's stream waits for each of them, so the op's completion
// event covers the whole sum. One communicator set per list of devices (ncclCommInitAll), made on
// first use and kept for the life of the process, like the accelerators themselves; its launches
// are serialised so that every device sees its collectives in one order (NCCL deadlocks
// otherwise).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/device.h"
#include "tandem/ops/dtype.h"

namespace tandem {
class Stream;
}

namespace tandem::ops {

// One device's part of a collective: `data` is a device pointer on `device`.
struct DeviceBuffer {
  Device device;
  void* data = nullptr;
};

// Why a sum over `devices` cannot go through the collective library, or "" when it can: every
// device a gpu(i) device, no device twice, at least two, the build compiled with NCCL and
// libnccl.so.2 loadable. Never throws.
std::string collective_sum_unavailable(const std::vector<Device>& devices);

// Enqueues the in-place sum of `count` elements of `dtype` over `buffers` (each buffer ends with
// the sum of all of them, bit-identical on every device), ordered after everything enqueued on
// `stream` so far and before anything enqueued on it later. `stream` is a stream of
// buffers[0].device. Throws tandem::Error when collective_sum_unavailable says why, or when
// NCCL or the CUDA runtime reports an error (naming the call and the devices).
void collective_sum(Stream& stream, DType dtype, const std::vector<DeviceBuffer>& buffers,
                    std::int64_t count);

// The NCCL version this process loaded ("2.28.9"), or "" when there is none (no NCCL in the
// build, or libnccl.so.2 not loadable). Loads the library; needs no GPU.
std::string collective_library_version();

}  // namespace tandem::ops
