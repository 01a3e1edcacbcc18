// TrainingStep: a whole training step -- forward, loss, backward and the optimizer's update --
// recorded once and replayed as one captured graph (tandem/graph.h; on a GPU, CUDA Graphs), as
// a jitted JAX step or a step captured with torch.cuda.graph is.
//
//   nn::TrainingStep step(net, trainer, [](const nd::NDArray& output, const nd::NDArray& label) {
//     return nd::mean(nd::softmax_cross_entropy(output, label));
//   });
//   for (const data::Batch& batch : loader) {
//     nd::NDArray loss = step(batch.data, batch.label, batch.data.shape()[0]);
//   }
//
// Each call does what this eager step does, with the same bits:
//
//   { auto recording = autograd::record(); loss = loss_fn(net(data), label); }
//   loss.backward();
//   trainer.step(batch_size);
//
// The first call runs it eagerly (the optimizer creates its state, the pools warm up); later
// calls go through an nd::HybridCache keyed by the inputs' shapes, dtypes and devices: the first
// call per signature records the step (its host code runs once, none of its ops run while
// recorded) and every call replays it. A replay runs no host code of the step: the network's
// forward, the tape walk and the Trainer's loop over parameters cost nothing per step.
//
// What a replay reads at its time: the inputs (copied into the entry's static inputs), the
// parameters, their gradients and the optimizer's state (the arrays, not copies). What it
// froze at recording: host values. So:
// - The learning rate (Trainer::next_learning_rate) and the batch size are checked at every
//   call; when the rate changed, or
//   the batch size for a data shape recorded with another, the entries are dropped and the
//   step is recorded again (a schedule that changes the rate every
//   step therefore runs at recording speed: set it per epoch).
// - The optimizer must not read the step count on the host (Optimizer::update_reads_step_count:
//   Adam's bias correction does): such a Trainer is refused at construction.
// - At a replay the Trainer's host bookkeeping still runs (Trainer::count_replayed_step: steps()
//   advances, a learning-rate schedule sets its rate), so checkpoints and schedules see every
//   step; a schedule that changes the rate every step records every step (set it per epoch).
// - The returned loss is the entry's static output: the next call overwrites it (ops pushed on
//   it before keep their values). Keep a value with loss.copy().
// A replay is all or nothing: the step is recorded with tandem::CaptureOptions::fail_as_one_unit
// (tandem/graph.h), so its device ops join as few device graphs as its host ops allow (one for a
// step without host ops) and a failure anywhere in one poisons every array it writes: the
// parameters, their gradients, the optimizer's state and the loss.
// Refused at construction (tandem::Error naming why): a Trainer that exchanges gradients during
// backward or across processes, and parameters with copies on several devices (train those
// eagerly, or hybridize the network only). A call under autograd::record() throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "tandem/nd/hybridize.h"
#include "tandem/nd/ndarray.h"
#include "tandem/nn/block.h"
#include "tandem/nn/trainer.h"

namespace tandem::nn {

class TrainingStep {
 public:
  using LossFunction =
      std::function<nd::NDArray(const nd::NDArray& output, const nd::NDArray& label)>;

  // `net` and `trainer` must outlive this object.
  TrainingStep(Block& net, Trainer& trainer, LossFunction loss);

  // One step on a batch of `batch_size` samples (Trainer::step's argument); returns the loss.
  nd::NDArray operator()(const nd::NDArray& data, const nd::NDArray& label,
                         std::int64_t batch_size);

  // Whether the last call replayed a recorded step (false: it ran eagerly or recorded).
  bool last_call_replayed() const { return last_call_replayed_; }
  // How often the step was recorded (once per signature, again after a rate or batch change).
  std::size_t recordings() const { return recordings_; }
  // Ops of the step recorded last (0 before any recording).
  std::size_t num_recorded_ops() const { return cache_.num_recorded_ops(); }
  long steps() const { return steps_; }
  // Drops the recordings: the next call records again.
  void clear();

 private:
  nd::NDArray eager_step(const nd::NDArray& data, const nd::NDArray& label,
                         std::int64_t batch_size);

  Block& net_;
  Trainer& trainer_;
  LossFunction loss_;
  nd::HybridCache cache_;
  bool warmed_up_ = false;
  double recorded_rate_ = 0;
  // The batch size each recorded data shape was recorded with.
  std::vector<std::pair<nd::Shape, std::int64_t>> recorded_batches_;
  std::size_t recordings_ = 0;
  bool last_call_replayed_ = false;
  long steps_ = 0;
};

}  // namespace tandem::nn
