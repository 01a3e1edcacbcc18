// tandem/ops/collectives.h with NCCL: libnccl.so.2 loaded on first use, one communicator set per
// list of gpu devices. Plain C++ against the CUDA runtime and nccl.h (no kernels of our own).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tandem/accel/cuda.h"
#include "tandem/accel/cuda_check.h"
#include "tandem/errors.h"
#include "tandem/ops/collectives.h"
#include "tandem/ops/cuda/nccl_library.h"

namespace tandem::ops {

namespace {

std::string device_list(const std::vector<int>& ordinals) {
  std::string text;
  for (const int ordinal : ordinals) text += (text.empty() ? "" : ", ") + to_string(cuda(ordinal));
  return text;
}

void check_nccl(ncclResult_t result, const char* call, const std::vector<int>& ordinals) {
  if (result == ncclSuccess) return;
  throw Error(std::string("tandem: ") + call + " on " + device_list(ordinals) +
              " failed: " + NcclLibrary::get().error_string(result));
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return ncclFloat32;
    case DType::float64:
      return ncclFloat64;
    case DType::int32:
      return ncclInt32;
    case DType::int64:
      return ncclInt64;
    case DType::uint8:
      return ncclUint8;
  }
  throw Error("tandem: a sum through NCCL got an unknown dtype");
}

// The communicators of one list of devices and a private stream on each (ordinals[i]'s
// communicator and stream at index i). Never destroyed: see collectives.h.
struct CommunicatorSet {
  explicit CommunicatorSet(std::vector<int> device_ordinals)
      : ordinals(std::move(device_ordinals)) {
    const NcclLibrary& nccl = NcclLibrary::get();
    comms.resize(ordinals.size());
    check_nccl(nccl.comm_init_all(comms.data(), static_cast<int>(ordinals.size()), ordinals.data()),
               "ncclCommInitAll", ordinals);
    for (const int ordinal : ordinals) {
      detail::DeviceGuard on(ordinal);
      cudaStream_t stream = nullptr;
      TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), ordinal);
      streams.push_back(stream);
    }
  }

  std::vector<int> ordinals;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  // Held while a sum is launched on every device, so that all devices see this set's
  // collectives in the same order.
  std::mutex launch;
};

CommunicatorSet& communicators_for(const std::vector<int>& ordinals) {
  static std::mutex mutex;
  static std::map<std::vector<int>, std::unique_ptr<CommunicatorSet>> sets;
  std::lock_guard lock(mutex);
  std::unique_ptr<CommunicatorSet>& set = sets[ordinals];
  if (!set) set = std::make_unique<CommunicatorSet>(ordinals);
  return *set;
}

std::vector<int> ordinals_of(const std::vector<DeviceBuffer>& buffers) {
  std::vector<int> ordinals;
  for (const DeviceBuffer& buffer : buffers) ordinals.push_back(buffer.device.id);
  return ordinals;
}

// An event recorded on `stream` (of device `ordinal`) that `waiter` waits for; the event is
// released at once (CUDA keeps it until the wait has been satisfied).
void order_after(cudaStream_t stream, int ordinal, cudaStream_t waiter, int waiter_ordinal) {
  cudaEvent_t event = nullptr;
  {
    detail::DeviceGuard on(ordinal);
    TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), ordinal);
    const cudaError_t recorded = cudaEventRecord(event, stream);
    if (recorded != cudaSuccess) {
      (void)cudaEventDestroy(event);
      detail::check_cuda(recorded, "cudaEventRecord", ordinal);
    }
  }
  detail::DeviceGuard on(waiter_ordinal);
  const cudaError_t waited = cudaStreamWaitEvent(waiter, event, 0);
  (void)cudaEventDestroy(event);
  detail::check_cuda(waited, "cudaStreamWaitEvent", waiter_ordinal);
}

}  // namespace

std::string collective_sum_unavailable(const std::vector<Device>& devices) {
  if (devices.size() < 2) return "a sum through NCCL needs at least two devices";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].kind != DeviceKind::cuda) {
      return "NCCL sums gpu(i) arrays only, and one is on " + to_string(devices[i]);
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        return "NCCL sums one array per device, and two are on " + to_string(devices[i]);
      }
    }
  }
  return NcclLibrary::get().unavailable();
}

void collective_sum(Stream& stream, DType dtype, const std::vector<DeviceBuffer>& buffers,
                    std::int64_t count) {
  std::vector<Device> devices;
  for (const DeviceBuffer& buffer : buffers) devices.push_back(buffer.device);
  if (const std::string why = collective_sum_unavailable(devices); !why.empty()) {
    throw Error("tandem: a sum across devices through NCCL is not possible: " + why);
  }
  if (stream.device() != devices.front()) {
    throw Error("tandem: a sum through NCCL must be launched on a stream of " +
                to_string(devices.front()) + " (the first buffer's device), not on " +
                stream.name());
  }
  if (count < 0) throw Error("tandem: a sum through NCCL got a negative element count");
  if (count == 0) return;
  const NcclLibrary& nccl = NcclLibrary::get();
  const std::vector<int> ordinals = ordinals_of(buffers);
  CommunicatorSet& set = communicators_for(ordinals);
  const cudaStream_t launch_stream = cuda_stream(stream);
  std::lock_guard lock(set.launch);
  // Fork: every private stream starts after what the op's stream was ordered behind.
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    order_after(launch_stream, ordinals.front(), set.streams[i], ordinals[i]);
  }
  check_nccl(nccl.group_start(), "ncclGroupStart", ordinals);
  ncclResult_t launched = ncclSuccess;
  for (std::size_t i = 0; i < ordinals.size() && launched == ncclSuccess; ++i) {
    launched = nccl.all_reduce(buffers[i].data, buffers[i].data, static_cast<std::size_t>(count),
                               nccl_type(dtype), ncclSum, set.comms[i], set.streams[i]);
  }
  // The group is closed even after a failed call (NCCL requires a balanced group).
  const ncclResult_t ended = nccl.group_end();
  check_nccl(launched, "ncclAllReduce", ordinals);
  check_nccl(ended, "ncclGroupEnd", ordinals);
  // Join: the op's stream, and so its completion event, waits for the sum on every device.
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    order_after(set.streams[i], ordinals[i], launch_stream, ordinals.front());
  }
}

std::string collective_library_version() {
  const NcclLibrary& nccl = NcclLibrary::get();
  if (!nccl.unavailable().empty()) return "";
  int version = 0;
  if (nccl.get_version(&version) != ncclSuccess) return "";
  // NCCL_VERSION(X, Y, Z) in nccl.h: X * 1000 + Y * 100 + Z up to 2.8, X * 10000 + Y * 100 + Z
  // after.
  const int major = version >= 10000 ? version / 10000 : version / 1000;
  const int minor = version >= 10000 ? version % 10000 / 100 : version % 1000 / 100;
  const int patch = version % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace tandem::ops
