// NcclProcessGroup: the collectives of a ProcessGroup on gpu arrays, through NCCL across the
// processes (PyTorch's NCCL process group): one communicator per process group and device,
// made with ncclCommInitRank from a unique id that rank 0 draws (ncclGetUniqueId) and the group
// broadcasts over MPI. libnccl.so.2 is loaded with dlopen on first use, as the in-process sums
// load it (ops/cuda/nccl_collectives.cc), so nothing links against it. Not part of the public
// API.
//
// Each collective is one engine op on the array's device (comm queue) that enqueues the NCCL
// call on the op's stream, so it is ordered after the kernels that produced the array and
// before those that read it, with no host wait. NCCL needs every rank to issue its collectives
// on a communicator in one order: every op also writes the group's private order var, so the
// engine runs them in call order, which is the same on every rank.
//
// What MPI's path checks and this one does not (yet): the header exchange (a mismatched
// collective is NCCL's undefined behaviour) and the timeout on a dead rank.
#pragma once

#include <memory>
#include <string>

#include "tandem/accel/process_transport.h"
#include "tandem/dist/process_group.h"

namespace tandem::dist::detail {

// Whether arrays on `device` cross processes through NCCL (their backend's capability,
// tandem/accel/process_transport.h) rather than through the cpu and MPI.
inline bool crosses_through_nccl(Device device) {
  return process_transport(device.kind) == ProcessTransport::nccl;
}

// Why `array` cannot be summed across processes through NCCL, or "" when it can: a contiguous
// array on cuda(i), a build with CUDA and nccl.h, libnccl.so.2 loadable. Never throws.
std::string nccl_unusable(const nd::NDArray& array);

class NcclProcessGroup {
 public:
  // Collective over `group` (rank 0 draws the id, the group broadcasts it, every rank waits for
  // it) and ncclCommInitRank on cuda(device). Throws tandem::Error naming the call and device.
  NcclProcessGroup(ProcessGroup& group, int device);
  ~NcclProcessGroup();
  NcclProcessGroup(const NcclProcessGroup&) = delete;
  NcclProcessGroup& operator=(const NcclProcessGroup&) = delete;

  int device() const;
  // Queue the collective (see the top of the file); `array` is on cuda(device()).
  void allreduce(nd::NDArray& array, ReduceOp op);
  void broadcast(nd::NDArray& array, int root);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace tandem::dist::detail
