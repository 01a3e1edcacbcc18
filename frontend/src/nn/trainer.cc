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
    slots_.push_back(Slot{entry.second, {}, false, 0, {}});
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
  sum_gradients(std::vector<bool>(slots_.size(), false));
}

void Trainer::sum_gradients(const std::vector<bool>& skipped) {
  if (exchange_) {
    std::vector<const Parameter*> skipped_parameters;
    for (std::size_t s = 0; s < slots_.size(); ++s) {
      if (skipped[s]) skipped_parameters.push_back(slots_[s].parameter.get());
    }
    exchange_->finish(skipped_parameters);
    return;
  }
  auto paused = autograd::pause();
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    if (skipped[s] || slot.parameter->grad_req() == GradReq::null) continue;
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

std::vector<bool> Trainer::stale_slots(const char* call, const StepOptions& options) const {
  std::vector<bool> stale(slots_.size(), false);
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    const Parameter& parameter = *slot.parameter;
    if (parameter.grad_req() == GradReq::null) continue;  // frozen since construction
    const bool same_generation = slot.seen_generation == parameter.handles_generation();
    for (std::size_t i = 0; i < parameter.devices().size(); ++i) {
      const std::uint64_t seen =
          same_generation && i < slot.seen_deliveries.size() ? slot.seen_deliveries[i] : 0;
      if (parameter.gradient_deliveries(i) > seen) continue;
      stale[s] = true;
      if (options.ignore_stale_grad && !cross_process_) break;
      throw Error(
          std::string("tandem: Trainer::") + call + ": the gradient of parameter '" +
          parameter.name() + "' on " + to_string(parameter.devices()[i]) +
          " has not been written by backward() since the last update (" +
          (steps_ == 0 ? std::string("no backward yet") : "step " + std::to_string(steps_)) +
          "): the parameter took no part in the forward, or backward was not called. " +
          (cross_process_
               ? std::string("Across processes every process must update every parameter: "
                             "leave the unused parameters out of the Trainer")
               : std::string("To update only the parameters this step used, pass "
                             "{.ignore_stale_grad = true}")));
    }
  }
  return stale;
}

void Trainer::step(std::int64_t batch_size, StepOptions options) {
  check_ready(batch_size);
  // Before the sums: they write the gradients, but are not what makes one fresh.
  const std::vector<bool> stale = stale_slots("step", options);
  sum_gradients(stale);
  update_slots(batch_size, stale);
}

void Trainer::update(std::int64_t batch_size, StepOptions options) {
  check_ready(batch_size);
  const std::vector<bool> stale = stale_slots("update", options);
  if (exchange_) exchange_->start_next_step();
  update_slots(batch_size, stale);
}

void Trainer::update_slots(std::int64_t batch_size, const std::vector<bool>& skipped) {
  broadcast_new_parameters();
  auto paused = autograd::pause();
  const double processes = cross_process_ ? static_cast<double>(cross_process_->size()) : 1.0;
  optimizer_->set_rescale_grad(1.0 / (static_cast<double>(batch_size) * processes));
  if (lr_scheduler_) optimizer_->set_learning_rate(lr_scheduler_->learning_rate(steps_));
  ++steps_;
  // Every copy's update goes to the optimizer in one call (grouped ops, one per device and
  // dtype); `weights` and `grads` hold the arrays the updates point to until it returns.
  std::vector<std::vector<nd::NDArray>> weights, grads;
  std::vector<ParameterUpdate> updates;
  std::vector<const Parameter*> updated;  // the parameter of each update
  std::vector<std::size_t> updated_slots;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    Slot& slot = slots_[s];
    if (skipped[s] || slot.parameter->grad_req() == GradReq::null) continue;
    weights.push_back(slot.parameter->list_data());
    grads.push_back(slot.parameter->list_grad());
    updated_slots.push_back(s);
    if (slot.states.size() != weights.back().size()) {
      slot.states.clear();
      for (const nd::NDArray& weight : weights.back()) {
        slot.states.push_back(optimizer_->create_state(weight));
      }
    }
  }
  for (std::size_t k = 0; k < updated_slots.size(); ++k) {
    Slot& slot = slots_[updated_slots[k]];
    for (std::size_t i = 0; i < weights[k].size(); ++i) {
      check_state(*slot.parameter, weights[k][i], slot.states[i]);
      updates.push_back({&weights[k][i], &grads[k][i], &slot.states[i]});
      updated.push_back(slot.parameter.get());
    }
  }
  try {
    optimizer_->update_all(steps_, updates);
  } catch (const nd::UpdateEntryError& error) {
    const std::size_t i = error.entry() < updates.size() ? error.entry() : 0;
    throw Error(std::string(error.what()) + " (updating parameter '" + updated[i]->name() +
                "' on " + to_string(updates[i].weight->device()) + " with " + optimizer_->name() +
                ")");
  }
  for (std::size_t k = 0; k < updated_slots.size(); ++k) {
    Slot& slot = slots_[updated_slots[k]];
    slot.seen_generation = slot.parameter->handles_generation();
    slot.seen_deliveries.resize(weights[k].size());
    for (std::size_t i = 0; i < weights[k].size(); ++i)
      slot.seen_deliveries[i] = slot.parameter->gradient_deliveries(i);
  }
}

}  // namespace tandem::nn
