#include "nn/gradient_buckets.h"

#include <algorithm>
#include <string>
#include <utility>

#include "distributed/collective_ops.h"
#include "distributed/nccl_allreduce.h"
#include "tandem/errors.h"
#include "tandem/nd/multi_device.h"

namespace tandem::nn::detail {

namespace {

std::size_t gradient_bytes(const Parameter& parameter) {
  return static_cast<std::size_t>(parameter.shape().num_elements()) *
         ops::dtype_size(parameter.dtype());
}

// Whether the parameter may share a bucket (see plan_gradient_buckets).
bool bucketable(const Parameter& parameter, BucketScope scope) {
  const std::size_t copies = parameter.devices().size();
  if (!parameter.initialized() || parameter.grad_req() != GradReq::write) return false;
  if (scope == BucketScope::across_processes) return copies == 1;
  // Any size on any number of devices: a gradient that nd::allreduce would send around the ring
  // is summed by a bucket of its own instead. The ring's adds, queued on each device's compute
  // stream while that device's backward is still queued there, held the stream until the ring's
  // copies had come around from the other devices: on 4 sim devices, a device's backward stood
  // still for 0.2-0.7 s of a 6.6 s ResNet-18 step (docs/benchmarks.md, "ResNet-18").
  return copies >= 2;
}

bool same_place(const Parameter& a, const Parameter& b) {
  return a.devices() == b.devices() && a.dtype() == b.dtype();
}

// The slab of `flat` that holds each of `gradients`, in order.
std::vector<nd::NDArray> slabs(const nd::NDArray& flat, const std::vector<nd::NDArray>& gradients) {
  std::vector<nd::NDArray> result;
  std::int64_t offset = 0;
  for (const nd::NDArray& gradient : gradients) {
    const std::int64_t size = gradient.size();
    result.push_back(flat.slice(offset, offset + size).reshape(gradient.shape()));
    offset += size;
  }
  return result;
}

// One op on `device` that copies each of `gradients` into its slab of `flat` (a bucket's pack)
// or, `into_flat` false, each slab back into its gradient (the unpack after a sum through NCCL).
void push_slab_transfer(const nd::NDArray& flat, const std::vector<nd::NDArray>& gradients,
                        Device device, bool into_flat, const char* name) {
  const std::vector<nd::NDArray> parts = slabs(flat, gradients);
  if (into_flat) {
    nd::detail::push_copies(gradients, parts, device, name);
  } else {
    nd::detail::push_copies(parts, gradients, device, name);
  }
}

std::vector<nd::NDArray> gradients_on(const std::vector<Parameter*>& members, Device device) {
  std::vector<nd::NDArray> gradients;
  for (const Parameter* member : members) gradients.push_back(member->grad(device));
  return gradients;
}

}  // namespace

std::vector<std::vector<std::size_t>> plan_gradient_buckets(
    const std::vector<std::shared_ptr<Parameter>>& parameters,
    const std::vector<std::size_t>& ready_order, std::size_t bucket_bytes, BucketScope scope) {
  // Last-ready first; parameters that never became ready go after the others (alone).
  std::vector<std::size_t> walk(ready_order.rbegin(), ready_order.rend());
  std::vector<bool> listed(parameters.size(), false);
  for (const std::size_t i : ready_order) listed.at(i) = true;
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<std::size_t> open;  // candidates gathered so far
  std::size_t open_bytes = 0;
  // The tail bucket holds one parameter; the next one's cap is the first cap, then it doubles.
  std::size_t cap = 0;
  const auto close = [&] {
    if (open.empty()) return;
    buckets.push_back(std::exchange(open, {}));
    open_bytes = 0;
    cap = cap == 0 ? std::max<std::size_t>(bucket_bytes / kFirstCapDivisor, 1)
                   : std::min(bucket_bytes, cap * 2);
  };
  for (const std::size_t i : walk) {
    const Parameter& parameter = *parameters[i];
    const std::size_t bytes = parameter.initialized() ? gradient_bytes(parameter) : 0;
    if (!bucketable(parameter, scope) || bytes > bucket_bytes) {
      buckets.push_back({i});
      continue;
    }
    if (!open.empty() &&
        (open_bytes + bytes > cap || !same_place(*parameters[open.front()], parameter))) {
      close();
    }
    open.push_back(i);
    open_bytes += bytes;
    if (cap == 0) close();  // the tail: the last-ready candidate alone
  }
  close();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!listed[i]) buckets.push_back({i});
  }
  return buckets;
}

bool summable_together(const std::vector<Parameter*>& members, BucketScope scope) {
  bool together = !members.empty();
  for (const Parameter* member : members) {
    together = together && same_place(*members.front(), *member) && bucketable(*member, scope);
  }
  return together;
}

void sum_across_processes(const std::vector<Parameter*>& members, CrossProcessReducer& reducer) {
  const Device device = members.front()->devices().front();
  const std::vector<nd::NDArray> gradients = gradients_on(members, device);
  if (gradients.size() == 1) {
    nd::NDArray gradient = gradients.front();
    reducer.sum_in_place(gradient);
    return;
  }
  std::int64_t elements = 0;
  for (const nd::NDArray& gradient : gradients) elements += gradient.size();
  const nd::NDArray& first = gradients.front();
  nd::NDArray flat = nd::detail::allocate_on(first.engine(), {elements}, first.dtype(), device,
                                             "cross_process_bucket_pack");
  push_slab_transfer(flat, gradients, device, /*into_flat=*/true, "cross_process_bucket_pack");
  reducer.sum_in_place(flat);
  push_slab_transfer(flat, gradients, device, /*into_flat=*/false, "cross_process_bucket_unpack");
}

BucketSum::BucketSum(std::vector<Parameter*> members)
    : members_(std::move(members)),
      flats_(members_.front()->devices().size()),
      received_(flats_.size(), std::vector<nd::NDArray>(flats_.size())) {}

void BucketSum::pack(std::size_t copy) {
  const Device device = members_.front()->devices().at(copy);
  const std::vector<nd::NDArray> gradients = gradients_on(members_, device);
  const nd::NDArray& first = gradients.front();
  if (gradients.size() == 1) {
    // One member: its gradient is the flat array (a view: no op).
    flats_[copy] = first.reshape({first.size()});
  } else {
    std::int64_t elements = 0;
    for (const nd::NDArray& gradient : gradients) elements += gradient.size();
    nd::NDArray flat = nd::detail::allocate_on(first.engine(), {elements}, first.dtype(), device,
                                               "allreduce_bucket_pack");
    push_slab_transfer(flat, gradients, device, /*into_flat=*/true, "allreduce_bucket_pack");
    flats_[copy] = std::move(flat);
  }
}

void BucketSum::send() {
  const std::vector<Device>& devices = members_.front()->devices();
  for (const nd::NDArray& flat : flats_) {
    if (!flat.defined()) {
      throw Error("tandem: GradientExchange: a bucket of " + std::to_string(members_.size()) +
                  " gradient(s) was sent before every device had packed it");
    }
  }
  if (nd::detail::nccl_unusable(flats_).empty()) {
    nd::detail::nccl_allreduce(flats_);
    summed_by_nccl_ = true;
    return;
  }
  const std::size_t count = devices.size();
  // Queued once the bucket is complete rather than at each pack, and each on the sending
  // device's peer-copy stream: a stream runs its copies in queue order, which is the order the
  // launchers got to them, not the order their packs end on the devices. On the receiver's
  // stream a copy waiting for one device's last pack held up the copies of packs the other
  // devices had made seconds before (ResNet-18 on 4 sim devices: exchange 49% hidden); on the
  // sender's, every copy waits only for that sender's packs, which its device makes in bucket
  // order (100% hidden).
  for (std::size_t from = 0; from < count; ++from) {
    for (std::size_t to = 0; to < count; ++to) {
      if (to == from) continue;
      received_[to][from] = nd::detail::send_to_device_as(flats_[from], devices[to], "allreduce");
    }
  }
}

void BucketSum::sum(const std::vector<nd::NDArray>& after) {
  const std::vector<Device>& devices = members_.front()->devices();
  const std::size_t count = devices.size();
  if (summed_by_nccl_) {
    // A bucket of one member: its pack is its gradient, summed in place already.
    if (members_.size() > 1) {
      for (std::size_t here = 0; here < count; ++here) push_unpack(here);
    }
    flats_.assign(count, nd::NDArray());
    summed_by_nccl_ = false;
    return;
  }
  for (std::size_t to = 0; to < count; ++to) {
    for (std::size_t from = 0; from < count; ++from) {
      if (from != to && !received_[to][from].defined()) {
        throw Error("tandem: GradientExchange: a bucket of " + std::to_string(members_.size()) +
                    " gradient(s) was summed before it was sent");
      }
    }
  }
  for (std::size_t here = 0; here < count; ++here) push_device_sum(here, after.at(here));
  flats_.assign(count, nd::NDArray());
  received_.assign(count, std::vector<nd::NDArray>(count));
}

void BucketSum::push_unpack(std::size_t here) {
  const Device device = members_.front()->devices().at(here);
  push_slab_transfer(flats_.at(here), gradients_on(members_, device), device,
                     /*into_flat=*/false, "allreduce_bucket_unpack");
}

void BucketSum::push_device_sum(std::size_t here, const nd::NDArray& after) {
  const std::vector<Device>& devices = members_.front()->devices();
  const std::size_t count = devices.size();
  const std::vector<nd::NDArray> gradients = gradients_on(members_, devices[here]);
  const std::vector<nd::NDArray>& received = received_[here];
  // Per device, the slab of its received flat that holds each member (the gradients themselves
  // for `here`), summed into the gradients in device order: ((g0 + g1) + g2) + ..., the sum of
  // the flats before `here` formed in the first received flat (ours).
  std::vector<std::vector<nd::NDArray>> addends(count);
  for (std::size_t d = 0; d < count; ++d)
    addends[d] = d == here ? gradients : slabs(received[d], gradients);
  // `after` (the device's last gradient written by this step's backward) only orders the op: the
  // op is granted once the device's backward is launched, so it queues behind it on the device's
  // stream instead of in the middle (where it would hold the stream until every device has
  // produced the bucket).
  nd::detail::push_sum_in_device_order(addends, here, after, devices[here], "allreduce_bucket_sum");
}

}  // namespace tandem::nn::detail
