// TrainingStep (tandem/nn/training_step.h): the step as one function of (data, label) that an
// nd::HybridCache records and replays, with the host values it freezes checked at every call.
#include "tandem/nn/training_step.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tandem/errors.h"
#include "tandem/nd/autograd.h"

namespace tandem::nn {

TrainingStep::TrainingStep(Block& net, Trainer& trainer, LossFunction loss)
    : net_(net),
      trainer_(trainer),
      loss_(std::move(loss)),
      cache_(CaptureOptions{.fail_as_one_unit = true}) {
  if (!loss_) throw Error("tandem: TrainingStep: the loss function is empty");
  if (trainer_.exchange() != nullptr) {
    throw Error(
        "tandem: TrainingStep: the Trainer exchanges gradients during backward "
        "(GradientExchangeMode::during_backward), whose hooks run host code at every step; a "
        "replayed step runs none: use GradientExchangeMode::at_step, or train eagerly");
  }
  if (trainer_.across_processes()) {
    throw Error(
        "tandem: TrainingStep: the Trainer sums gradients across processes "
        "(TrainerOptions::cross_process); a replayed step cannot take part in the processes' "
        "collectives: train eagerly");
  }
  if (trainer_.optimizer().update_reads_step_count()) {
    throw Error("tandem: TrainingStep: the optimizer '" + trainer_.optimizer().name() +
                "' reads the step count on the host at every update (e.g. Adam's bias "
                "correction), which a replayed step would freeze at its recording: use an "
                "optimizer that does not (SGD), or train eagerly");
  }
  for (const auto& [name, parameter] : net_.collect_params()) {
    if (parameter->devices().size() > 1) {
      throw Error("tandem: TrainingStep: parameter '" + name + "' has copies on " +
                  std::to_string(parameter->devices().size()) +
                  " devices; a TrainingStep replays a step on one device: train data-parallel "
                  "eagerly (hybridize the network for its forward and backward)");
    }
  }
}

nd::NDArray TrainingStep::eager_step(const nd::NDArray& data, const nd::NDArray& label,
                                     std::int64_t batch_size) {
  nd::NDArray loss;
  {
    auto recording = autograd::record();
    loss = loss_(net_(data), label);
  }
  loss.backward();
  trainer_.step(batch_size);
  return loss;
}

nd::NDArray TrainingStep::operator()(const nd::NDArray& data, const nd::NDArray& label,
                                     std::int64_t batch_size) {
  if (autograd::is_recording()) {
    throw Error(
        "tandem: TrainingStep: called under autograd::record(); a training step records "
        "its own forward: call it outside the recording scope");
  }
  if (!data.defined() || !label.defined()) {
    throw Error(std::string("tandem: TrainingStep: the ") + (data.defined() ? "label" : "data") +
                " is a null NDArray");
  }
  if (batch_size < 1) {
    throw Error("tandem: TrainingStep: batch_size must be at least 1, got " +
                std::to_string(batch_size));
  }
  last_call_replayed_ = false;
  ++steps_;
  // The first step creates the optimizer's state and takes first-step branches (SGD's momentum
  // buffer starts from the gradient): run it as it is.
  if (!warmed_up_) {
    warmed_up_ = true;
    return eager_step(data, label, batch_size);
  }
  // The host values a recording froze: the rate for every entry, the batch size per data shape
  // (the last batch of an epoch is a smaller shape with its own entry and batch size).
  const double rate = trainer_.next_learning_rate();
  const auto same_shape = [&](const auto& recorded) { return recorded.first == data.shape(); };
  const auto batch = std::find_if(recorded_batches_.begin(), recorded_batches_.end(), same_shape);
  if (cache_.num_entries() > 0 && (rate != recorded_rate_ || (batch != recorded_batches_.end() &&
                                                              batch->second != batch_size))) {
    cache_.clear();
    recorded_batches_.clear();
  }
  if (cache_.num_entries() == 0) recorded_rate_ = rate;
  if (std::find_if(recorded_batches_.begin(), recorded_batches_.end(), same_shape) ==
      recorded_batches_.end()) {
    recorded_batches_.emplace_back(data.shape(), batch_size);
  }
  const std::size_t entries_before = cache_.num_entries();
  std::vector<nd::NDArray> outputs = cache_.call(
      [this, batch_size](const std::vector<nd::NDArray>& in) {
        return std::vector<nd::NDArray>{eager_step(in[0], in[1], batch_size)};
      },
      {data, label});
  if (cache_.num_entries() != entries_before) {
    ++recordings_;  // the recording ran Trainer::step's host code once
  } else if (cache_.last_call_replayed()) {
    last_call_replayed_ = true;
    trainer_.count_replayed_step();
  }
  return outputs[0];
}

void TrainingStep::clear() {
  cache_.clear();
  recorded_batches_.clear();
}

}  // namespace tandem::nn
