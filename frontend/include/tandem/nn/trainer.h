// Trainer: applies an optimizer to a set of parameters (Gluon's gluon.Trainer).
//
//   nn::Trainer trainer(net.collect_params(), nn::SGD(0.1));
//   for (const data::Batch& batch : loader) {
//     nd::NDArray loss;
//     {
//       auto recording = autograd::record();
//       loss = nd::softmax_cross_entropy(net(batch.data), batch.label).sum();
//     }
//     loss.backward();
//     trainer.step(batch.data.shape()[0]);   // queued: nothing waits
//   }
//
// step(batch_size) sets the optimizer's rescale_grad to 1 / batch_size (the loss is a sum over
// the batch) and updates the parameters of `params` whose grad_req was not null when the
// Trainer was made (setting one to null later freezes it). A parameter with copies on several
// devices (data parallelism: one forward and backward per device on its part of the batch)
// first has its gradients summed across the copies (nd::allreduce, so every copy sees the same
// bits), then every copy gets the same update: the copies stay equal, and the step equals one
// device's step on the whole batch. Everything is queued as engine ops.
//
// With {.exchange = GradientExchangeMode::during_backward} the sums are not left to step():
// each parameter's sum is queued from inside the backward() that finishes its last copy's
// gradient, so the exchange of the last layers overlaps the backward of the first ones
// (nn::GradientExchange, tandem/nn/gradient_exchange.h); step() then pushes only the sums
// backward did not, and the updates. Same sums, same bits as at_step (but for the gradients the
// ring would sum on 3 devices or more: see gradient_exchange.h).
//
// With TrainerOptions::cross_process (data parallelism across processes, e.g. a
// tandem::dist::ProcessGroup under mpirun: PyTorch DDP's defaults and guarantees):
// - the parameters are broadcast from process 0 when the Trainer is made (those initialized
//   later, at their first step), so every process starts from the same weights;
// - the gradients are summed across the processes too (during backward in during_backward
//   mode, see GradientExchangeOptions::cross_process; in step() in at_step mode);
// - step(batch_size) takes the batch size of this process and divides by batch_size times the
//   number of processes: N processes with batch b each step like one process with batch N * b.
// Every process must build the same network and call the same Trainer functions in the same
// order (the collectives are matched by order).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tandem/nn/block.h"
#include "tandem/nn/gradient_exchange.h"
#include "tandem/nn/lr_scheduler.h"
#include "tandem/nn/optimizer.h"

namespace tandem::nn {

// When a Trainer sums the gradients of parameters with copies on several devices.
enum class GradientExchangeMode {
  at_step,          // in step() (allreduce_grads), after every backward
  during_backward,  // as soon as backward has produced a parameter's gradient on every copy
};

struct TrainerOptions {
  GradientExchangeMode exchange = GradientExchangeMode::at_step;
  // during_backward only: how the exchange groups small gradients (GradientExchangeOptions).
  GradientExchangeOptions exchange_options{};
  // Train together with other processes (null: this process alone). See above.
  std::shared_ptr<CrossProcessReducer> cross_process = nullptr;
};

// What a step does beside the update (Gluon's Trainer.step keyword arguments).
struct StepOptions {
  // A parameter copy whose gradient no backward() has written since this Trainer's last update
  // is stale: the parameter was not used by this step's forward (a subset of the network), or
  // backward was not called. By default step() and update() refuse it, naming the parameter and
  // the device, before queuing anything (MXNet's Trainer does the same). With
  // ignore_stale_grad, a parameter with a stale copy is left alone in this step: not summed
  // across devices, not updated, its optimizer state untouched. Not available across processes
  // (every process must update the same parameters), where a stale parameter is always an error.
  bool ignore_stale_grad = false;
};

class Trainer {
 public:
  Trainer(const ParameterDict& params, std::shared_ptr<Optimizer> optimizer,
          TrainerOptions options = {});
  template <std::derived_from<Optimizer> O>
  Trainer(const ParameterDict& params, O optimizer, TrainerOptions options = {})
      : Trainer(params, std::make_shared<O>(std::move(optimizer)), options) {}

  // One update of every parameter with a gradient. Throws tandem::Error (before queuing
  // anything) when batch_size < 1, a parameter is not initialized, or a gradient is stale (see
  // StepOptions).
  //   trainer.step(64);                               // every parameter took part
  //   trainer.step(64, {.ignore_stale_grad = true});  // only those backward reached
  void step(std::int64_t batch_size, StepOptions options = {});
  // step() without the cross-device sum (each copy updated from its own gradient), for
  // callers that reduce gradients themselves.
  void update(std::int64_t batch_size, StepOptions options = {});
  // Sums each parameter's gradients across its copies (what step does first); in
  // during_backward mode only those backward has not summed yet.
  void allreduce_grads();
  // The exchange of during_backward mode (null in at_step mode).
  const GradientExchange* exchange() const { return exchange_.get(); }
  // Whether gradients are summed across processes (TrainerOptions::cross_process).
  bool across_processes() const { return cross_process_ != nullptr; }

  Optimizer& optimizer() const { return *optimizer_; }
  double learning_rate() const { return optimizer_->learning_rate(); }
  void set_learning_rate(double learning_rate) { optimizer_->set_learning_rate(learning_rate); }
  long steps() const { return steps_; }
  // The learning rate the next update will use: the schedule's for the next step, else the
  // optimizer's current rate.
  double next_learning_rate() const {
    return lr_scheduler_ ? lr_scheduler_->learning_rate(steps_) : optimizer_->learning_rate();
  }
  // The host bookkeeping of update() for a step whose array work was replayed from a recording
  // (nn::TrainingStep): the schedule's rate is set and steps() advances; no array is touched.
  void count_replayed_step() {
    if (lr_scheduler_) optimizer_->set_learning_rate(lr_scheduler_->learning_rate(steps_));
    ++steps_;
  }

  // From now on each update first sets the learning rate to schedule->learning_rate(steps()),
  // the number of updates done before it (null: the rate stays where it is set).
  void set_lr_scheduler(std::shared_ptr<const LRScheduler> schedule) {
    lr_scheduler_ = std::move(schedule);
  }
  const LRScheduler* lr_scheduler() const { return lr_scheduler_.get(); }

  // Writes what training needs to resume besides the parameters (save those with
  // Block::save_parameters): the step count, the learning rate, the optimizer's state of every
  // parameter copy (momentum, moments) and the current engine's default random generator
  // (dropout masks, random initializers). A sync point. The file is written to a temporary
  // file and renamed over `path` once complete, so a crash while writing leaves the previous
  // checkpoint whole. Throws tandem::Error for a parameter that is not initialized or a file
  // that cannot be written.
  //   net.save_parameters("ckpt.params");
  //   trainer.save_states("ckpt.states");
  //   ... later, in a fresh process with the same network and optimizer ...
  //   net.load_parameters("ckpt.params", devices);
  //   trainer.load_states("ckpt.states");     // training goes on bit for bit
  void save_states(const std::string& path) const;
  // Reads a file written by save_states into this Trainer: the optimizer must be of the same
  // kind and the parameters initialized on as many devices, with the same names and shapes.
  // Everything is checked before anything changes; a mismatch throws tandem::Error naming the
  // file and what differs.
  void load_states(const std::string& path);

 private:
  struct Slot {
    std::shared_ptr<Parameter> parameter;
    std::vector<std::vector<nd::NDArray>> states;  // one per copy, created at the first update
    bool broadcast = false;  // cross_process: its weights were broadcast from process 0
    // The parameter's gradient deliveries per copy at the last update, and the handles
    // generation they count in (a new generation counts from 0).
    std::uint64_t seen_generation = 0;
    std::vector<std::uint64_t> seen_deliveries;
  };
  void check_ready(std::int64_t batch_size) const;
  // The slots whose gradient is stale on some copy (none when every gradient is fresh); throws
  // tandem::Error naming the first stale parameter unless options.ignore_stale_grad.
  std::vector<bool> stale_slots(const char* call, const StepOptions& options) const;
  // allreduce_grads() leaving out the skipped slots.
  void sum_gradients(const std::vector<bool>& skipped);
  // The pushes of update(), for the slots not skipped.
  void update_slots(std::int64_t batch_size, const std::vector<bool>& skipped);
  // Throws tandem::Error naming the parameter when `state` no longer matches `weight`.
  void check_state(const Parameter& parameter, const nd::NDArray& weight,
                   const std::vector<nd::NDArray>& state) const;
  // Broadcasts from process 0 the initialized parameters not broadcast yet (cross_process).
  void broadcast_new_parameters();

  std::vector<Slot> slots_;
  std::shared_ptr<Optimizer> optimizer_;
  std::unique_ptr<GradientExchange> exchange_;
  std::shared_ptr<CrossProcessReducer> cross_process_;
  std::shared_ptr<const LRScheduler> lr_scheduler_;
  long steps_ = 0;
};

}  // namespace tandem::nn
