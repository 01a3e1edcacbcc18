// NcclProcessGroup in a build without CUDA or without nccl.h: every gpu collective across
// processes is refused with the reason.
#include "nccl_process_group.h"

#include "tandem/errors.h"

namespace tandem::dist::detail {

std::string nccl_unusable(const nd::NDArray& array) {
  return "this build of tandem has no NCCL (built without CUDA or without nccl.h), so " +
         to_string(array.device()) + " arrays cannot be summed across processes";
}

struct NcclProcessGroup::State {};

NcclProcessGroup::NcclProcessGroup(ProcessGroup& /*group*/, int device) {
  throw Error("tandem::dist: no NCCL in this build: cannot make a communicator on " +
              to_string(cuda(device)));
}

NcclProcessGroup::~NcclProcessGroup() = default;

int NcclProcessGroup::device() const {
  return 0;
}

void NcclProcessGroup::allreduce(nd::NDArray& array, ReduceOp /*op*/) {
  throw Error("tandem::dist: " + nccl_unusable(array));
}

void NcclProcessGroup::broadcast(nd::NDArray& array, int /*root*/) {
  throw Error("tandem::dist: " + nccl_unusable(array));
}

}  // namespace tandem::dist::detail
