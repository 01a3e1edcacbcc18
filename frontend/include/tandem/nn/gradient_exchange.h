// GradientExchange: sums each parameter's gradients across its device copies as soon as the
// backward passes have produced them on every copy, while the gradients of the layers nearer
// the input are still being computed (PyTorch DDP's autograd hooks, Gluon's multi-device
// Trainer). nn::Trainer makes one when TrainerOptions::exchange is during_backward:
//
//   nn::Trainer trainer(net.collect_params(), nn::SGD(0.1),
//                       {.exchange = nn::GradientExchangeMode::during_backward});
//   auto xs = nd::split_and_load(batch.data, devices), ys = nd::split_and_load(batch.label,
//   devices); std::vector<nd::NDArray> losses;
//   {
//     auto recording = autograd::record();
//     for (std::size_t d = 0; d < devices.size(); ++d)
//       losses.push_back(nd::softmax_cross_entropy(net(xs[d]), ys[d]).sum());
//   }
//   for (auto& loss : losses) loss.backward();   // the last layers' sums are queued in here
//   trainer.step(batch_size);                     // only the updates are left
//
// How: a gradient-ready callback on every parameter (Parameter::set_gradient_ready_callback)
// counts, per step, the copies whose gradient backward() has finished queuing. When the last
// copy of a parameter reports, the parameter's nd::allreduce (one group of copies and adds,
// on the copy queues and the receiving devices) is pushed right there, inside that backward:
// with one backward per device, the exchange of the last layer is queued before the backward
// of the first layers on the last device, and the engine runs them side by side.
//
// finish() (what Trainer::step calls) pushes the sums that backward did not (parameters that
// no backward reached on some copy, parameters with GradReq::add, whose gradients accumulate
// over several backward calls and are summed once, at the step) and starts the next step's
// count. The sums are the ones Trainer::allreduce_grads would push, so the results are the
// same bits as summing at the step, except for the gradients that nd::allreduce sends around
// the ring (kRingMinimumBytes and up on 3 devices or more): from the second step the buckets
// sum those in device order, which may differ from the ring's in the last bits.
//
// Buckets (PyTorch DDP's bucket_cap_mb): parameters with small gradients are summed together, one
// exchange of their concatenation per bucket instead of one per parameter. The plan is made at
// the end of the first step in which every parameter is initialized, from the order in which
// that step's backward finished the gradients (DDP rebuilds its buckets after the first
// iteration the same way); until then each parameter is summed alone. Walking that order from
// the last-ready gradient back: the last-ready parameter is a bucket of its own (nothing of the
// backward is left to hide its exchange, so the exposed tail is one small exchange), and the
// caps of the buckets before it start at 1/128 of GradientExchangeOptions::bucket_bytes and
// double with each bucket up to bucket_bytes (a bucket near the tail is ready when little
// backward is left to hide it; those further back have time and are as large as allowed).
// Each device packs a bucket as soon as its own backward has queued the bucket's gradients; once
// every device has, the packs are copied to every other device (during the backward of the
// earlier layers), and once the step's last bucket is sent each device adds them into its
// gradients in device order, behind its own backward. Each element is summed in the same order
// as alone with the gather, so the results are the same bits (details, and the ring's
// gradients, in frontend/src/nn/gradient_buckets.h).
// The adds are queued inside the backward that completes the step's last bucket, or by finish()
// when some gradient was not produced on every copy.
//
// A copy whose gradient is produced twice before finish() (two backward calls on one device's
// loss with GradReq::write) is refused with a tandem::Error from that backward: the first
// gradient may already have been summed and sent to the other devices.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tandem/nn/cross_process.h"
#include "tandem/nn/parameter.h"

namespace tandem::nn {

struct GradientExchangeOptions {
  // Most gradient bytes (per device) summed by one bucket's exchange; 0: one exchange per
  // parameter. Parameters with larger gradients are summed alone, in a bucket of their own (also
  // those nd::allreduce would send around the ring: kRingMinimumBytes and up on 3 or more
  // devices). The buckets nearest the end of the backward are capped lower (see above). Small,
  // so that a bucket's copies stay latency-bound and several buckets start while backward runs
  // (a bucket waits for its last member).
  std::size_t bucket_bytes = 64 << 10;
  // The same across processes (the cross_process exchange of parameters with one copy here):
  // most gradient bytes summed by one collective, with the same tail-first caps. Larger than
  // bucket_bytes: a collective across processes has a fixed cost (the hand-off to the comm
  // thread and an MPI call, tens of microseconds), so fewer and larger ones are cheaper, and
  // they still start during backward (PyTorch DDP uses 25 MB, its first bucket 1 MB). 0: one
  // collective per parameter.
  std::size_t cross_process_bucket_bytes = 4 << 20;
};

class GradientExchange {
 public:
  // Installs the callbacks on `parameters` (replacing any other exchange's). Parameters with
  // one copy are never summed; deferred ones are covered once their copies exist.
  //
  // `cross_process` (null: this process only) sums across processes too. Parameters with one
  // copy here are summed across the processes in buckets, like the devices' buckets above: the
  // plan (GradientExchangeOptions::cross_process_bucket_bytes, the last-ready gradient alone,
  // caps doubling from 1/128 of the cap) is made from the first step's backward order, which
  // is the same on every process, and each bucket's one collective (pack, sum, unpack) is
  // queued inside the backward that produced its last member. Until the plan is made (first
  // step) each gradient is summed alone, as soon as backward has produced it. A parameter
  // with copies on several devices is summed across the devices first and then, at finish(),
  // each copy across the processes.
  explicit GradientExchange(std::vector<std::shared_ptr<Parameter>> parameters,
                            GradientExchangeOptions options = {},
                            std::shared_ptr<CrossProcessReducer> cross_process = nullptr);
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;
  // The callbacks stay installed but do nothing once the exchange is gone.
  ~GradientExchange();

  // Pushes the sums not pushed during backward and starts the next step. The parameters in
  // `skipped` (stale this step: Trainer's ignore_stale_grad) are not summed.
  void finish(const std::vector<const Parameter*>& skipped = {});
  // Starts the next step without pushing anything (Trainer::update, for callers that sum the
  // rest themselves).
  void start_next_step();

  // Parameters summed from inside backward() since the last finish() (for tests and reports).
  std::size_t summed_during_backward() const;
  // Buckets of the plan (0 before it is made: see above).
  std::size_t buckets() const;
  // Buckets of the plan across processes (0 before it is made, or without cross_process), and
  // each one's parameter names, the bucket of the last-ready gradient first.
  std::size_t cross_process_buckets() const;
  std::vector<std::vector<std::string>> cross_process_bucket_plan() const;
  // The plan: each bucket's parameter names, the bucket of the last-ready gradient first
  // (empty before the plan is made).
  std::vector<std::vector<std::string>> bucket_plan() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tandem::nn
