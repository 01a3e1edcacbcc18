// Gradient buckets of nn::GradientExchange: small parameters whose gradients are summed together,
// one exchange per bucket instead of one per parameter (PyTorch DDP's bucket_cap_mb).
//
// The plan follows the order in which backward finished the gradients in one recorded step
// (PyTorch DDP rebuilds its buckets from the first iteration's order the same way), walked from
// the last-ready gradient back to the first:
// - the last-ready parameter is a bucket of its own: nothing of the backward is left to hide its
//   exchange behind, so the exposed tail is one small exchange, as with one per parameter;
// - the buckets before it are capped at kFirstCapDivisor-th of bucket_bytes, the cap doubling
//   with each bucket up to bucket_bytes: a bucket near the tail is ready when little backward
//   is left, so it is kept small; the ones further back have the rest of the backward to hide
//   behind and are as large as bucket_bytes allows (fewer exchanges).
//
// How a bucket is summed (BucketSum): each device packs its members' gradients into one flat
// array as soon as that device's backward has queued the last of them (an op queued right behind
// the gradients, while the device's backward goes on), and the flat is copied at once to every
// other device: those copies wait only for that pack, so they run during the backward of the
// earlier layers. Once every device has packed, each device adds the flats in device order,
// ((g0 + g1) + g2) + ..., and unpacks the sum into its gradients. A bucket of one member needs
// no pack: its gradients are the flat arrays, summed in place.
//
// Why every device sums for itself (all-gather, then a local sum, as MPI's recursive doubling
// does for short messages) instead of summing on one device and copying the sum back: an add
// that waits for another device's data is launched after the ops its own device could launch at
// once, so it runs behind that device's whole queued backward, and a copy of the sum back would
// wait for it. Here no copy waits for an add. The cost is N-1 copies into every device per
// bucket instead of 2(N-1) in all: buckets are small (bucket_bytes), so their copies are
// latency-bound, and each device receives its N-1 copies on its own copy stream.
//
// Every element is summed in the same order as its own gather allreduce would, which is what
// AllreduceAlgorithm::automatic picks for every member (the plan leaves out the gradients
// automatic would send around the ring), and float addition is commutative, so every device
// holds the same bits as after nd::allreduce.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "tandem/nd/ndarray.h"
#include "tandem/nn/parameter.h"

namespace tandem::nn::detail {

// The first cap before the tail bucket is bucket_bytes / kFirstCapDivisor (see above).
inline constexpr std::size_t kFirstCapDivisor = 128;

// Groups `parameters` into buckets (indices into it). `ready_order` lists the parameters in the
// order backward finished their gradients in the recorded step; parameters missing from it
// (not reached by that backward) get a bucket of their own. A bucket holds candidates adjacent in
// that order: initialized parameters with GradReq::write and copies on two or more devices, of
// one dtype and one device list, whose gradient is under nd::kRingMinimumBytes when there are
// three devices or more. Others, and candidates over their bucket's cap, get a bucket of their
// own. Every parameter is in exactly one bucket; buckets are listed from the last-ready to the
// first-ready. bucket_bytes == 0: one bucket per parameter.
std::vector<std::vector<std::size_t>> plan_gradient_buckets(
    const std::vector<std::shared_ptr<Parameter>>& parameters,
    const std::vector<std::size_t>& ready_order, std::size_t bucket_bytes);

// Whether `members` can be summed by a BucketSum (one dtype and device list, each bucketable):
// false when their placement changed since the plan; they are then summed one by one with
// nd::allreduce.
bool summable_together(const std::vector<Parameter*>& members);

// One step's sum of one bucket whose members are summable_together.
class BucketSum {
 public:
  explicit BucketSum(std::vector<Parameter*> members);

  // Queues the pack of the members' gradients on copy `copy` (an index into the members'
  // devices) and its copies to the other devices: call once that copy of every member is final
  // in the queues. Call with autograd paused.
  void pack(std::size_t copy);
  // Queues every device's sum and unpack: call once every copy is packed. Call with autograd
  // paused.
  void sum();

 private:
  std::vector<Parameter*> members_;
  std::vector<nd::NDArray> flats_;                  // per copy, once packed
  std::vector<std::vector<nd::NDArray>> received_;  // [to][from]: flats_[from] copied to `to`
};

}  // namespace tandem::nn::detail
