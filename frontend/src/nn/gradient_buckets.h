// Gradient buckets of nn::GradientExchange: small parameters whose gradients are summed together,
// one allreduce per bucket instead of one per parameter (PyTorch DDP's bucket_cap_mb).
//
// A bucket's gradients are concatenated on each device (one concat op per device), the flat
// arrays summed with one nd::allreduce, and the sums copied back into the gradients (one op per
// device). Every element is summed in the same order as its own allreduce would: the bucket uses
// the gather algorithm, ((g0 + g1) + g2) ... in device order, which is what
// AllreduceAlgorithm::automatic picks for every member (plan_gradient_buckets leaves out the
// gradients automatic would send around the ring). So the results are the same bits.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "tandem/nn/parameter.h"

namespace tandem::nn::detail {

// Groups `parameters` (indices into it) into buckets of at most `bucket_bytes` of gradient per
// device, walking them from the last to the first (the order backward produces them, so that a
// bucket's members finish close together). A bucket holds consecutive candidates: initialized
// parameters with GradReq::write and copies on two or more devices, of one dtype and one device
// list, whose gradient is under nd::kRingMinimumBytes when there are three devices or more.
// Others, and candidates over `bucket_bytes`, get a bucket of their own. Every parameter is in
// exactly one bucket. bucket_bytes == 0: one bucket per parameter.
std::vector<std::vector<std::size_t>> plan_gradient_buckets(
    const std::vector<std::shared_ptr<Parameter>>& parameters, std::size_t bucket_bytes);

// Sums the gradients of `members` across their copies (the same bits as one nd::allreduce per
// member). One member: that allreduce. Members whose device lists or dtypes differ (changed since
// the plan) are summed one by one. Call with autograd paused.
void allreduce_bucket(const std::vector<Parameter*>& members);

}  // namespace tandem::nn::detail
