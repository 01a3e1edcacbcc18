// tandem/ops/collectives.h in a build without NCCL's header (or without CUDA): every sum across
// devices goes through the copy-based algorithms.
#include "tandem/ops/collectives.h"

#include "tandem/errors.h"

namespace tandem::ops {

namespace {

constexpr const char* kWhy =
    "this build of tandem has no NCCL (nccl.h was not found at configure "
    "time, or the build has no CUDA backend)";

}  // namespace

std::string collective_sum_unavailable(const std::vector<Device>&) {
  return kWhy;
}

void collective_sum(Stream&, DType, const std::vector<DeviceBuffer>&, std::int64_t) {
  throw Error(std::string("tandem: a sum across devices through NCCL is not possible: ") + kWhy);
}

std::string collective_library_version() {
  return "";
}

}  // namespace tandem::ops
