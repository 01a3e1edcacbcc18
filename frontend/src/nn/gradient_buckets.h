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
// How a bucket is summed (BucketSum), in three parts:
// - pack: each device packs its members' gradients into one flat array as soon as that device's
//   backward has queued the last of them (one op, queued right behind the gradients while the
//   device's backward goes on; a bucket of one member needs none: its gradient is the flat);
// - send: once every device has packed (from inside the last device's backward), every flat is
//   copied to every other device on the sending device's peer-copy stream; each copy waits only
//   for its pack, so it runs during the backward of the earlier layers;
// - sum: once the step's last bucket is sent (the backward of every device is then queued), or
//   at GradientExchange::finish, one op on each device adds the flats into its gradients in
//   device order, ((g0 + g1) + g2) + ...; it also reads the gradient that device's backward
//   wrote last, only so that it is queued behind that backward.
//
// Why every device sums for itself (all-gather, then a local sum, as MPI's recursive doubling
// does for short messages) instead of summing on one device and copying the sum back: a sim or
// CUDA device runs its compute ops in stream order, and an op that waits for another device's
// data is put on its stream once it is granted, usually after everything its own device could
// launch at once, i.e. behind that device's whole queued backward; a copy of the sum back would
// wait for that add. Here no copy waits for an add. And why the adds wait for the last bucket
// and are ordered behind the device's backward: an add on a device's stream in the middle of
// its backward holds that stream until the slowest device has produced the same gradients.
// Measured on 4 sim devices: adds queued per bucket (or granted before their device's backward
// ops, which the launchers' timing allows) cost about one convolution's backward, 190 ms, per
// step, 5.2-6.2 s per epoch against 3.8 s. The cost: N-1 copies into every device per bucket
// instead of 2(N-1) in all; buckets are small (bucket_bytes), so their copies are latency-bound,
// and each device sends its N-1 copies of a pack on its own peer-copy stream, in the order it
// made its packs (on the receivers' streams, a copy waiting for one device's last pack held up
// the copies of packs the other devices had made long before).
//
// On gpu devices with NCCL usable (tandem/ops/collectives.h), send() instead sums the packs in
// place with one NCCL allreduce (one op on the first device's comm queue, queued once every
// device has packed, so it too runs during the backward of the earlier layers) and sum() copies
// each pack's slabs back into its members' gradients (nothing for a bucket of one member, whose
// pack is its gradient). The sum then follows NCCL's order: the same bits on every device, but
// not necessarily those of the gather below.
//
// Otherwise every element is summed in the same order as its own gather allreduce would
// (AllreduceAlgorithm::gather), and float addition is commutative, so every device holds the
// same bits as after nd::allreduce with the gather. That is what AllreduceAlgorithm::automatic
// picks too, except for gradients of nd::kRingMinimumBytes and up on 3 devices or more, which
// automatic sends around the ring (the last bits may then differ from the Trainer's sum at the
// step): the exchange sums those too, each in a bucket of its own, because the ring's adds,
// queued on every device's compute stream in the middle of its backward, held that stream until
// the ring's copies came around from the other devices (docs/design.md).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "tandem/nd/ndarray.h"
#include "tandem/nn/cross_process.h"
#include "tandem/nn/parameter.h"

namespace tandem::nn::detail {

// The first cap before the tail bucket is bucket_bytes / kFirstCapDivisor (see above).
inline constexpr std::size_t kFirstCapDivisor = 128;

// What a plan sums together: copies of one parameter on several devices of this process, or
// the one copy of each process's parameter across the processes (CrossProcessReducer).
enum class BucketScope { across_devices, across_processes };

// Groups `parameters` into buckets (indices into it). `ready_order` lists the parameters in the
// order backward finished their gradients in the recorded step; parameters missing from it
// (not reached by that backward) get a bucket of their own. A bucket holds candidates adjacent in
// that order: initialized parameters with GradReq::write and copies on two or more devices, of
// one dtype and one device list. Others, and candidates over their bucket's cap, get a bucket of
// their own. Every parameter is in exactly one bucket; buckets are listed from the last-ready to
// the first-ready. bucket_bytes == 0: one bucket per parameter. With BucketScope::across_processes
// the candidates are instead the initialized parameters with GradReq::write and exactly one copy
// (of one dtype and device per bucket): the plan is then a function of the order and the shapes
// only, the same on every process that runs the same network.
std::vector<std::vector<std::size_t>> plan_gradient_buckets(
    const std::vector<std::shared_ptr<Parameter>>& parameters,
    const std::vector<std::size_t>& ready_order, std::size_t bucket_bytes,
    BucketScope scope = BucketScope::across_devices);

// Whether `members` can be summed by a BucketSum (one dtype and device list, each bucketable):
// false when their placement changed since the plan; they are then summed one by one with
// nd::allreduce.
bool summable_together(const std::vector<Parameter*>& members,
                       BucketScope scope = BucketScope::across_devices);

// Sums the gradients of `members` (one copy each, summable_together across processes) across the
// processes with one collective: one op packs them into a flat array, `reducer` sums the flat
// in place, one op copies its slabs back into the gradients. A bucket of one member is summed
// in place, without a pack. Every element is summed by the same collective as alone (MPI's sum
// is the same on every process), so every process holds the same bits.
void sum_across_processes(const std::vector<Parameter*>& members, CrossProcessReducer& reducer);

// One step's sum of one bucket whose members are summable_together.
class BucketSum {
 public:
  explicit BucketSum(std::vector<Parameter*> members);

  // Queues the pack of the members' gradients on copy `copy` (an index into the members'
  // devices): call once that copy of every member is final in the queues.
  void pack(std::size_t copy);
  // Queues the copies of every pack to every other device (or, with NCCL, the sum of the packs
  // in place): call once every copy is packed.
  void send();
  // Queues, on every device, one op that adds the flats into the gradients (with NCCL: that
  // copies the summed pack back into them): call after send(), with autograd paused. after[d],
  // when defined, is the last gradient this step's backward wrote on device d: the op reads
  // it, only to be queued behind that backward.
  void sum(const std::vector<nd::NDArray>& after);
  const std::vector<Device>& devices() const { return members_.front()->devices(); }

 private:
  void push_device_sum(std::size_t here, const nd::NDArray& after);
  // With NCCL: copies the summed pack of device `here` into its members' gradients.
  void push_unpack(std::size_t here);

  std::vector<Parameter*> members_;
  std::vector<nd::NDArray> flats_;                  // per copy, once packed
  std::vector<std::vector<nd::NDArray>> received_;  // [to][from]: flats_[from] copied to `to`
  bool summed_by_nccl_ = false;                     // send() summed flats_ in place with NCCL
};

}  // namespace tandem::nn::detail
