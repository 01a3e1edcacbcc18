#include "distributed/nccl_allreduce.h"

#include <utility>

#include "core/lazy_view.h"
#include "tandem/ops/collectives.h"

namespace tandem::nd::detail {

std::string nccl_unusable(const std::vector<NDArray>& arrays) {
  std::vector<Device> devices;
  for (const NDArray& array : arrays) {
    if (!array.is_contiguous()) {
      return "an array of shape " + array.shape().to_string() + " on " + to_string(array.device()) +
             " is a strided view (NCCL sums contiguous memory)";
    }
    devices.push_back(array.device());
  }
  return ops::collective_sum_unavailable(devices);
}

void nccl_allreduce(const std::vector<NDArray>& arrays) {
  std::vector<DenseRef> buffers;
  std::vector<Device> devices;
  std::vector<Var> writes;
  for (const NDArray& array : arrays) {
    buffers.push_back(dense_ref(array));
    devices.push_back(array.device());
    writes.push_back(array.var());
  }
  const NDArray& first = arrays.front();
  first.engine().push(
      [buffers = std::move(buffers), devices = std::move(devices), dtype = first.dtype(),
       count = first.size()](RunContext& ctx) {
        std::vector<ops::DeviceBuffer> parts;
        for (std::size_t i = 0; i < buffers.size(); ++i) {
          parts.push_back({devices[i], buffers[i].resolve()});
        }
        ops::collective_sum(*ctx.stream(), dtype, parts, count);
      },
      first.device(), {}, writes, {.name = "allreduce", .queue = Queue::comm});
}

}  // namespace tandem::nd::detail
