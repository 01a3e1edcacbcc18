#include "gradient_buckets.h"

#include <utility>

#include "../kernels.h"
#include "../lazy_view.h"
#include "tandem/nd/join.h"
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

// One op on `device` that copies each slab of `flat` into its gradient.
void push_unpack(const nd::NDArray& flat, const std::vector<nd::NDArray>& gradients) {
  std::vector<std::pair<nd::detail::LazyView, nd::detail::LazyView>> copies;
  std::vector<Var> writes;
  std::int64_t offset = 0;
  for (const nd::NDArray& gradient : gradients) {
    const std::int64_t size = gradient.size();
    const nd::NDArray slab = flat.slice(offset, offset + size).reshape(gradient.shape());
    copies.emplace_back(nd::detail::lazy_view(slab), nd::detail::lazy_view(gradient));
    writes.push_back(gradient.var());
    offset += size;
  }
  flat.engine().push(
      [copies = std::move(copies)](RunContext& ctx) {
        const ops::Kernels& table = nd::detail::kernels(ctx);
        for (const auto& [from, to] : copies)
          table.copy(ctx.stream(), from.resolve(), to.resolve());
      },
      flat.device(), {flat.var()}, writes, {.name = "allreduce_bucket_unpack"});
}

}  // namespace

std::vector<std::vector<std::size_t>> plan_gradient_buckets(
    const std::vector<std::shared_ptr<Parameter>>& parameters, std::size_t bucket_bytes) {
  std::vector<std::vector<std::size_t>> buckets;
  std::vector<std::size_t> open;  // candidates gathered so far
  std::size_t open_bytes = 0;
  const auto close = [&] {
    if (!open.empty()) buckets.push_back(std::exchange(open, {}));
    open_bytes = 0;
  };
  for (std::size_t i = parameters.size(); i-- > 0;) {
    const Parameter& parameter = *parameters[i];
    const std::size_t bytes = parameter.initialized() ? gradient_bytes(parameter) : 0;
    if (!bucketable(parameter) || bytes > bucket_bytes) {
      buckets.push_back({i});
      continue;
    }
    if (!open.empty() &&
        (open_bytes + bytes > bucket_bytes || !same_place(*parameters[open.front()], parameter))) {
      close();
    }
    open.push_back(i);
    open_bytes += bytes;
  }
  close();
  return buckets;
}

void allreduce_bucket(const std::vector<Parameter*>& members) {
  bool together = members.size() > 1;
  for (const Parameter* member : members) {
    together = together && same_place(*members.front(), *member) && bucketable(*member);
  }
  if (!together) {
    for (Parameter* member : members) nd::allreduce(member->list_grad());
    return;
  }
  const std::vector<Device>& devices = members.front()->devices();
  std::vector<std::vector<nd::NDArray>> gradients(devices.size());  // per device, per member
  std::vector<nd::NDArray> flats;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    std::vector<nd::NDArray> parts;
    for (const Parameter* member : members) {
      gradients[d].push_back(member->grad(devices[d]));
      parts.push_back(gradients[d].back().reshape({gradients[d].back().size()}));
    }
    flats.push_back(nd::concat(parts, 0));
  }
  nd::allreduce(flats, nd::AllreduceAlgorithm::gather);
  for (std::size_t d = 0; d < devices.size(); ++d) push_unpack(flats[d], gradients[d]);
}

}  // namespace tandem::nn::detail
