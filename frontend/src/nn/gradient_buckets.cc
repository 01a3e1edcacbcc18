#include "nn/gradient_buckets.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/access.h"
#include "core/kernels.h"
#include "core/lazy_view.h"
#include "core/transfer.h"
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

// One op on `device` that runs `copies` (from, to) one after the other, on its compute queue (a
// bucket's pack: part of the exchange, named so in the profiler, not of the backward).
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

// One op on `device` that copies each of `gradients` into its slab of `flat` (a bucket's pack)
// or, `into_flat` false, each slab back into its gradient (the unpack after a sum through NCCL).
void push_slab_transfer(const nd::NDArray& flat, const std::vector<nd::NDArray>& gradients,
                        Device device, bool into_flat, const char* name) {
  SlabCopies copies;
  std::vector<Var> gradient_vars;
  const std::vector<nd::NDArray> parts = slabs(flat, gradients);
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    nd::detail::LazyView gradient = nd::detail::lazy_view(gradients[i]);
    nd::detail::LazyView slab = nd::detail::lazy_view(parts[i]);
    if (into_flat) {
      copies.emplace_back(std::move(gradient), std::move(slab));
    } else {
      copies.emplace_back(std::move(slab), std::move(gradient));
    }
    gradient_vars.push_back(gradients[i].var());
  }
  if (into_flat) {
    push_slab_copies(flat.engine(), device, std::move(copies), gradient_vars, {flat.var()}, name);
  } else {
    push_slab_copies(flat.engine(), device, std::move(copies), {flat.var()}, gradient_vars, name);
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
  const Device device = members_.front()->devices().at(copy);
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
  // Queued once the bucket is complete rather than at each pack: a device's copy stream runs its
  // copies in queue order, and a copy queued at the first device's pack of its last bucket would
  // hold up the second device's earlier buckets until the first device's backward ends.
  for (std::size_t from = 0; from < count; ++from) {
    for (std::size_t to = 0; to < count; ++to) {
      if (to == from) continue;
      received_[to][from] =
          nd::detail::copy_to_device_named(flats_[from], devices[to], "allreduce");
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
  // Per member: its gradient and, per device, the slab of the received flat that holds it (the
  // gradient itself for `here`).
  struct Member {
    nd::detail::DenseRef gradient;
    std::vector<nd::detail::DenseRef> parts;  // per device; parts[here] unused
    std::int64_t elements = 0;
  };
  std::vector<Member> members;
  std::vector<std::vector<nd::NDArray>> received_slabs(count);
  for (std::size_t d = 0; d < count; ++d) {
    if (d != here) received_slabs[d] = slabs(received[d], gradients);
  }
  for (std::size_t m = 0; m < gradients.size(); ++m) {
    Member member{nd::detail::dense_ref(gradients[m]), {}, gradients[m].size()};
    for (std::size_t d = 0; d < count; ++d) {
      member.parts.push_back(d == here ? member.gradient
                                       : nd::detail::dense_ref(received_slabs[d][m]));
    }
    members.push_back(std::move(member));
  }
  // ((g0 + g1) + g2) + ... with g_here = the gradient: the sum of the flats before it, formed in
  // the first received flat (ours), then gradient = gradient + that sum (the same bits as that
  // sum + gradient: float addition is commutative), then the flats after it added in order.
  std::vector<Var> writes;
  for (const nd::NDArray& gradient : gradients) writes.push_back(gradient.var());
  if (here >= 2) writes.push_back(received[0].var());
  std::vector<Var> reads;
  const auto read = [&](Var var) {
    if (std::find(writes.begin(), writes.end(), var) == writes.end() &&
        std::find(reads.begin(), reads.end(), var) == reads.end()) {
      reads.push_back(var);
    }
  };
  for (std::size_t d = (here >= 2 ? 1 : 0); d < count; ++d) {
    if (d != here) read(received[d].var());
  }
  // `after` (the device's last gradient written by this step's backward) only orders the op: the
  // op is granted once the device's backward is launched, so it queues behind it on the device's
  // stream instead of in the middle (where it would hold the stream until every device has
  // produced the bucket).
  if (after.defined()) read(after.var());
  const ops::DType dtype = gradients.front().dtype();
  gradients.front().engine().push(
      [members = std::move(members), here, count, dtype](RunContext& ctx) {
        const ops::Kernels& table = nd::detail::kernels(ctx);
        const auto add = [&](const nd::detail::DenseRef& a, const nd::detail::DenseRef& b,
                             const nd::detail::DenseRef& out, std::int64_t n) {
          table.binary_dense(ctx.stream(), ops::BinaryOp::add, dtype, a.resolve(), b.resolve(),
                             out.resolve(), n);
        };
        for (const Member& member : members) {
          const std::int64_t n = member.elements;
          for (std::size_t d = 1; d < here; ++d)
            add(member.parts[0], member.parts[d], member.parts[0], n);
          if (here > 0) add(member.gradient, member.parts[0], member.gradient, n);
          for (std::size_t d = here + 1; d < count; ++d) {
            add(member.gradient, member.parts[d], member.gradient, n);
          }
        }
      },
      devices[here], reads, writes, {.name = "allreduce_bucket_sum"});
}

}  // namespace tandem::nn::detail
