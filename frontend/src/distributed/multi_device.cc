// split_and_load and allreduce: compositions of slice, copyto and +=, so every copy and add is
// an ordinary op whose ordering the engine already guarantees (or, on gpu devices with NCCL,
// one op that sums through it: nccl_allreduce.h).
#include "tandem/nd/multi_device.h"

#include <string>

#include "core/checks.h"
#include "core/transfer.h"
#include "distributed/nccl_allreduce.h"
#include "distributed/ring_allreduce.h"
#include "tandem/errors.h"
#include "tandem/ops/dtype.h"

namespace tandem::nd {

std::vector<NDArray> split_and_load(const NDArray& batch, const std::vector<Device>& devices,
                                    bool even_split) {
  detail::check_defined("split_and_load", batch);
  if (devices.empty()) throw Error("tandem: split_and_load: the device list is empty");
  if (batch.ndim() == 0) {
    throw Error("tandem: split_and_load: cannot split a 0-d array (shape " +
                batch.shape().to_string() + ") along its first axis");
  }
  const auto count = static_cast<std::int64_t>(devices.size());
  const std::int64_t rows = batch.shape()[0];
  if (rows < count) {
    throw Error("tandem: split_and_load: a batch of shape " + batch.shape().to_string() +
                " has fewer rows than the " + std::to_string(count) + " devices");
  }
  if (even_split && rows % count != 0) {
    throw Error("tandem: split_and_load: a batch of shape " + batch.shape().to_string() +
                " cannot be split evenly over " + std::to_string(count) +
                " devices; pass even_split = false to allow parts that differ by one row");
  }
  for (Device device : devices) detail::check_transfer("split_and_load", batch.device(), device);
  std::vector<NDArray> parts;
  parts.reserve(devices.size());
  std::int64_t begin = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t length = rows / count + (i < rows % count ? 1 : 0);
    parts.push_back(batch.slice(begin, begin + length).as_in_context(devices[i]));
    begin += length;
  }
  return parts;
}

namespace {

// The sum formed on arrays[0]'s device, then copied back (the only algorithm before the ring;
// its order of adds is what the 2-device results have always been).
void gather_allreduce(const std::vector<NDArray>& arrays) {
  NDArray total = arrays.front();
  for (std::size_t i = 1; i < arrays.size(); ++i) {
    total += detail::copy_to_device_named(arrays[i], total.device(), "allreduce");
  }
  for (std::size_t i = 1; i < arrays.size(); ++i) {
    detail::copy_into_named(total, arrays[i], "allreduce");
  }
}

}  // namespace

void allreduce(const std::vector<NDArray>& arrays, AllreduceAlgorithm algorithm) {
  if (arrays.empty()) throw Error("tandem: allreduce: the list of arrays is empty");
  NDArray total = arrays.front();
  detail::check_defined("allreduce", total);
  for (const NDArray& array : arrays) {
    detail::check_defined("allreduce", array);
    if (!(array.shape() == total.shape())) {
      throw Error("tandem: allreduce: shapes " + total.shape().to_string() + " and " +
                  array.shape().to_string() + " differ; every array must have the same shape");
    }
    detail::check_same_dtype("allreduce", total, array);
    detail::check_transfer("allreduce", array.device(), total.device());
  }
  // Each array is one replica: two that share memory would be summed into themselves (the same
  // array twice came out doubled).
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    for (std::size_t j = i + 1; j < arrays.size(); ++j) {
      if (detail::same_view(arrays[i], arrays[j]) ||
          detail::overlaps_differently(arrays[i], arrays[j])) {
        throw Error("tandem: allreduce: arrays " + std::to_string(i) + " and " + std::to_string(j) +
                    " (on " + to_string(arrays[i].device()) +
                    ") share memory; each must be a replica of its own");
      }
    }
  }
  if (arrays.size() == 1) return;
  switch (algorithm) {
    case AllreduceAlgorithm::gather:
      gather_allreduce(arrays);
      return;
    case AllreduceAlgorithm::ring:
      detail::check_ring("allreduce", arrays);
      detail::ring_allreduce(arrays);
      return;
    case AllreduceAlgorithm::nccl:
      if (const std::string why = detail::nccl_unusable(arrays); !why.empty()) {
        throw Error("tandem: allreduce: AllreduceAlgorithm::nccl cannot be used: " + why);
      }
      detail::nccl_allreduce(arrays);
      return;
    case AllreduceAlgorithm::automatic:
      break;
  }
  // NCCL where it can sum these arrays (gpu devices, NCCL loadable); it says no for other kinds.
  if (detail::nccl_unusable(arrays).empty()) {
    detail::nccl_allreduce(arrays);
    return;
  }
  const std::size_t bytes = static_cast<std::size_t>(total.size()) * ops::dtype_size(total.dtype());
  if (arrays.size() >= 3 && bytes >= kRingMinimumBytes && detail::ring_fits(arrays)) {
    detail::ring_allreduce(arrays);
  } else {
    gather_allreduce(arrays);
  }
}

}  // namespace tandem::nd
