#include "gradient_buckets.h"

#include <algorithm>
#include <string>
#include <utility>

#include "../access.h"
#include "../kernels.h"
#include "../lazy_view.h"
#include "../transfer.h"
#include "tandem/errors.h"
#include "tandem/nd/multi_device.h"

namespace tandem::nn::detail {

namespace {

std::size_t gradient_bytes(const Parameter& parameter) {
  return static_cast<std::size_t>(parameter.shape().num_elements()) *
         ops::dtype_size(parameter.dtype());
}

// Whether the parameter may share a bucket (see plan_gradient_buckets).
bool bucketable(const Parameter& parameter) {
  const std::size_t copies = parameter.devices().size();
  if (!parameter.initialized() || parameter.grad_req() != GradReq::write || copies < 2) {
    return false;
  }
  return copies < 3 || gradient_bytes(parameter) < nd::kRingMinimumBytes;
}

bool same_place(const Parameter& a, const Parameter& b) {
  return a.devices() == b.devices() && a.dtype() == b.dtype();
}

using SlabCopies = std::vector<std::pair<nd::detail::LazyView, nd::detail::LazyView>>;

// One op on `device` that runs `copies` (from, to) one after the other, on its compute queue: the
// pack and unpack of a bucket are part of the exchange (named so in the profiler), not backward.
void push_slab_copies(Engine& engine, Device device, SlabCopies copies, std::vector<Var> reads,
                      std::vector<Var> writes, const char* name) {
  engine.push(
      [copies = std::move(copies)](RunContext& ctx) {
        const ops::Kernels& table = nd::detail::kernels(ctx);
        for (const auto& [from, to] : copies)
          table.copy(ctx.stream(), from.resolve(), to.resolve());
      },
      device, reads, writes, {.name = name});
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

std::vector<nd::NDArray> gradients_on(const std::vector<Parameter*>& members, Device device) {
  std::vector<nd::NDArray> gradients;
  for (const Parameter* member : members) gradients.push_back(member->grad(device));
  return gradients;
}

// One op on the flat's device that copies each slab of `flat` into its gradient.
void push_unpack(const nd::NDArray& flat, const std::vector<nd::NDArray>& gradients) {
  SlabCopies copies;
  std::vector<Var> writes;
  const std::vector<nd::NDArray> parts = slabs(flat, gradients);
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    copies.emplace_back(nd::detail::lazy_view(parts[i]), nd::detail::lazy_view(gradients[i]));
    writes.push_back(gradients[i].var());
  }
  push_slab_copies(flat.engine(), flat.device(), std::move(copies), {flat.var()}, writes,
                   "allreduce_bucket_unpack");
}

}  // namespace

std::vector<std::vector<std::size_t>> plan_gradient_buckets(
    const std::vector<std::shared_ptr<Parameter>>& parameters,
    const std::vector<std::size_t>& ready_order, std::size_t bucket_bytes) {
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
    if (!bucketable(parameter) || bytes > bucket_bytes) {
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

bool summable_together(const std::vector<Parameter*>& members) {
  bool together = !members.empty();
  for (const Parameter* member : members) {
    together = together && same_place(*members.front(), *member) && bucketable(*member);
  }
  return together;
}

BucketSum::BucketSum(std::vector<Parameter*> members)
    : members_(std::move(members)),
      flats_(members_.front()->devices().size()),
      received_(flats_.size(), std::vector<nd::NDArray>(flats_.size())) {}

void BucketSum::pack(std::size_t copy) {
  const std::vector<Device>& devices = members_.front()->devices();
  const Device device = devices.at(copy);
  const std::vector<nd::NDArray> gradients = gradients_on(members_, device);
  const nd::NDArray& first = gradients.front();
  if (gradients.size() == 1) {
    // One member: its gradient is the flat array (a view: no op).
    flats_[copy] = first.reshape({first.size()});
  } else {
    std::int64_t elements = 0;
    for (const nd::NDArray& gradient : gradients) elements += gradient.size();
    nd::NDArray flat = nd::detail::allocate_array(first.engine(), {elements}, first.dtype(), device,
                                                  "allreduce_bucket_pack");
    SlabCopies copies;
    std::vector<Var> reads;
    const std::vector<nd::NDArray> parts = slabs(flat, gradients);
    for (std::size_t i = 0; i < gradients.size(); ++i) {
      copies.emplace_back(nd::detail::lazy_view(gradients[i]), nd::detail::lazy_view(parts[i]));
      reads.push_back(gradients[i].var());
    }
    push_slab_copies(first.engine(), device, std::move(copies), reads, {flat.var()},
                     "allreduce_bucket_pack");
    flats_[copy] = std::move(flat);
  }
  // Sent at once: each copy waits only for this pack, not for the other devices' backward.
  for (std::size_t to = 0; to < devices.size(); ++to) {
    if (to == copy) continue;
    received_[to][copy] = nd::detail::copy_to_device_named(flats_[copy], devices[to], "allreduce");
  }
}

void BucketSum::sum() {
  const std::vector<Device>& devices = members_.front()->devices();
  for (const nd::NDArray& flat : flats_) {
    if (!flat.defined()) {
      throw Error("tandem: GradientExchange: a bucket of " + std::to_string(members_.size()) +
                  " gradient(s) was summed before every device had packed it");
    }
  }
  const std::size_t count = devices.size();
  for (std::size_t here = 0; here < count; ++here) {
    // ((g0 + g1) + g2) + ... with g_here = own: the sum of the gradients before it (a fresh
    // array), then own = own + that sum (the same bits as that sum + own: float addition is
    // commutative), then the gradients after it added in order.
    const std::vector<nd::NDArray>& received = received_[here];
    nd::NDArray& own = flats_[here];
    if (here > 0) {
      nd::NDArray before = received[0];
      for (std::size_t d = 1; d < here; ++d) before += received[d];
      own += before;
    }
    for (std::size_t d = here + 1; d < count; ++d) own += received[d];
    if (members_.size() > 1) push_unpack(own, gradients_on(members_, devices[here]));
  }
  flats_.assign(count, nd::NDArray());
  received_.assign(count, std::vector<nd::NDArray>(count));
}

}  // namespace tandem::nn::detail
