// Trainer: cross-device gradient sums and the optimizer's update on every copy.
#include "tandem/nn/trainer.h"

#include <string>

#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/multi_device.h"

namespace tandem::nn {

Trainer::Trainer(const ParameterDict& params, std::shared_ptr<Optimizer> optimizer,
                 TrainerOptions options)
    : optimizer_(std::move(optimizer)), cross_process_(options.cross_process) {
  if (!optimizer_) throw Error("tandem: Trainer: a null optimizer");
  std::vector<std::shared_ptr<Parameter>> trained;
  for (const ParameterDict::Entry& entry : params) {
    if (entry.second->grad_req() == GradReq::null) continue;
    slots_.push_back(Slot{entry.second, {}, false});
    trained.push_back(entry.second);
  }
  if (options.exchange == GradientExchangeMode::during_backward) {
    exchange_ = std::make_unique<GradientExchange>(std::move(trained), options.exchange_options,
                                                   cross_process_);
  }
  broadcast_new_parameters();
}

void Trainer::broadcast_new_parameters() {
  if (!cross_process_) return;
  auto paused = autograd::pause();
  for (Slot& slot : slots_) {
    if (slot.broadcast || !slot.parameter->initialized()) continue;
    for (nd::NDArray weight : slot.parameter->list_data())
      cross_process_->broadcast_in_place(weight, 0);
    slot.broadcast = true;
  }
}

void Trainer::check_ready(std::int64_t batch_size) const {
  if (batch_size < 1) {
    throw Error("tandem: Trainer::step: batch_size must be >= 1, got " +
                std::to_string(batch_size));
  }
  for (const Slot& slot : slots_) {
    if (slot.parameter->initialized()) continue;
    throw Error("tandem: Trainer::step: the parameter '" + slot.parameter->name() +
                "' is not initialized" +
                (slot.parameter->deferred()
                     ? std::string(" (its shape is inferred at the first forward: run a forward "
                                   "and backward before stepping)")
                     : std::string(" (call initialize on the network)")));
  }
}

void Trainer::allreduce_grads() {
  if (exchange_) {
    exchange_->finish();
    return;
  }
  auto paused = autograd::pause();
  for (Slot& slot : slots_) {
    if (slot.parameter->grad_req() == GradReq::null) continue;
    if (slot.parameter->devices().size() > 1) nd::allreduce(slot.parameter->list_grad());
    if (!cross_process_) continue;
    for (nd::NDArray gradient : slot.parameter->list_grad()) cross_process_->sum_in_place(gradient);
  }
}

// The optimizer's state of a parameter copy was made like the weight at the first step; a weight
// cast or moved since then would meet it in the update with a bare dtype or device mismatch.
void Trainer::check_state(const Parameter& parameter, const nd::NDArray& weight,
                          const std::vector<nd::NDArray>& state) const {
  for (const nd::NDArray& array : state) {
    if (array.dtype() == weight.dtype() && array.shape() == weight.shape() &&
        array.device() == weight.device()) {
      continue;
    }
    throw Error("tandem: Trainer::step: parameter '" + parameter.name() + "' is " +
                dtype_name(weight.dtype()) + " " + weight.shape().to_string() + " on " +
                to_string(weight.device()) + ", but its " + optimizer_->name() +
                " state was made for " + dtype_name(array.dtype()) + " " +
                array.shape().to_string() + " on " + to_string(array.device()) +
                " at the first step (the parameter was cast, reshaped or moved since): make a new "
                "Trainer for the changed parameters");
  }
}

void Trainer::step(std::int64_t batch_size) {
  check_ready(batch_size);
  allreduce_grads();
  update(batch_size);
}

void Trainer::update(std::int64_t batch_size) {
  check_ready(batch_size);
  if (exchange_) exchange_->start_next_step();
  broadcast_new_parameters();
  auto paused = autograd::pause();
  const double processes = cross_process_ ? static_cast<double>(cross_process_->size()) : 1.0;
  optimizer_->set_rescale_grad(1.0 / (static_cast<double>(batch_size) * processes));
  if (lr_scheduler_) optimizer_->set_learning_rate(lr_scheduler_->learning_rate(steps_));
  ++steps_;
  for (Slot& slot : slots_) {
    if (slot.parameter->grad_req() == GradReq::null) continue;  // frozen since construction
    std::vector<nd::NDArray> weights = slot.parameter->list_data();
    const std::vector<nd::NDArray> grads = slot.parameter->list_grad();
    if (slot.states.size() != weights.size()) {
      slot.states.clear();
      for (const nd::NDArray& weight : weights) {
        slot.states.push_back(optimizer_->create_state(weight));
      }
    }
    for (std::size_t i = 0; i < weights.size(); ++i) {
      check_state(*slot.parameter, weights[i], slot.states[i]);
      try {
        optimizer_->update(steps_, weights[i], grads[i], slot.states[i]);
      } catch (const Error& error) {
        throw Error(std::string(error.what()) + " (updating parameter '" + slot.parameter->name() +
                    "' on " + to_string(weights[i].device()) + " with " + optimizer_->name() + ")");
      }
    }
  }
}

}  // namespace tandem::nn
