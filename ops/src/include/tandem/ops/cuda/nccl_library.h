// NcclLibrary: NCCL's entry points, resolved from libnccl.so.2 on first use (dlopen, never
// linked), for both users of NCCL: the collectives across the devices of one process
// (ops/cuda/nccl_collectives.cc) and across processes (tandem::dist,
// frontend/src/distributed/mpi/nccl_process_group.cc, which reaches this private header through
// its include path). Built only with CUDA and nccl.h (ops/CMakeLists.txt).
//
//   const tandem::ops::NcclLibrary& nccl = tandem::ops::NcclLibrary::get();
//   if (!nccl.unavailable().empty()) throw Error(nccl.unavailable());
//   nccl.all_reduce(send, receive, count, ncclFloat, ncclSum, comm, stream);
#pragma once

#include <nccl.h>

#include <string>

namespace tandem::ops {

class NcclLibrary {
 public:
  // Loaded once per process. The handle is never closed: communicators made from it live as
  // long as their owners, up to the end of the process.
  static const NcclLibrary& get();

  // "" when the library and every entry point below were found, else why not.
  const std::string& unavailable() const { return unavailable_; }

  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;

 private:
  NcclLibrary();

  std::string unavailable_;
};

}  // namespace tandem::ops
