// Optimizers: the update rule applied to each parameter copy (MXNet's mx.optimizer).
//
//   nn::SGD sgd(0.1, /*momentum=*/0.9, /*wd=*/1e-4);
//   nn::Adam adam(1e-3);
//
// An update is one op on the parameter's device (nd::sgd_update, nd::sgd_mom_update,
// nd::adam_update: queued, nothing waits). The gradient is first scaled by rescale_grad (the
// Trainer sets it to 1 / batch_size) and weight decay added: g = rescale_grad * grad + wd * weight.
// Then
//   SGD:  momentum 0: weight -= lr * g
//         else:       mom = momentum * mom - lr * g;  weight += mom
//   Adam: m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//         weight -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon)
// where t counts the updates (1 for the first).
//
// A Trainer's step hands all its updates to update_all at once: SGD and Adam queue them as
// grouped ops (nd::multi_sgd_update, nd::multi_sgd_mom_update, nd::multi_adam_update), one per
// device and dtype, with the bits of one update() per parameter.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tandem/nd/ndarray.h"
#include "tandem/nd/optimizer_updates.h"

namespace tandem::nn {

// One parameter copy's update in a step (Optimizer::update_all).
struct ParameterUpdate {
  nd::NDArray* weight = nullptr;
  const nd::NDArray* grad = nullptr;
  std::vector<nd::NDArray>* state = nullptr;  // from create_state
};

class Optimizer {
 public:
  // Throws tandem::Error when the learning rate or wd is not a finite number >= 0.
  explicit Optimizer(double learning_rate, double wd = 0.0);
  virtual ~Optimizer() = default;

  // The state one parameter copy needs (momentum, moments), as arrays like `weight`.
  virtual std::vector<nd::NDArray> create_state(const nd::NDArray& weight) const = 0;
  // Queues the update of `weight` from `grad` with `state` (from create_state); `t` is the
  // update's number, from 1.
  virtual void update(long t, nd::NDArray& weight, const nd::NDArray& grad,
                      std::vector<nd::NDArray>& state) const = 0;
  // Queues the updates of many parameter copies, as update() for each in order would. By
  // default it calls update() for each; SGD and Adam queue grouped ops. An error in the update
  // of entry i is an nd::UpdateEntryError with entry() == i; SGD and Adam check every entry
  // first and then queue nothing.
  virtual void update_all(long t, std::span<const ParameterUpdate> updates) const;
  virtual std::string name() const = 0;
  // Whether update() computes with its step count `t` on the host (Adam's bias correction):
  // a replayed training step (nn::TrainingStep) would freeze it at its recording.
  virtual bool update_reads_step_count() const { return false; }

  double learning_rate() const { return learning_rate_; }
  // Throws tandem::Error (naming the value) unless it is a finite number >= 0.
  void set_learning_rate(double learning_rate);
  double wd() const { return wd_; }
  double rescale_grad() const { return rescale_grad_; }
  // Throws tandem::Error unless it is a finite number.
  void set_rescale_grad(double rescale_grad);

 protected:
  // rescale_grad * grad + wd * weight (queued).
  nd::NDArray effective_grad(const nd::NDArray& weight, const nd::NDArray& grad) const;

 private:
  double learning_rate_;
  double wd_;
  double rescale_grad_ = 1.0;
};

class SGD : public Optimizer {
 public:
  // Throws tandem::Error naming the value unless momentum is in [0, 1].
  explicit SGD(double learning_rate = 0.01, double momentum = 0.0, double wd = 0.0);
  std::vector<nd::NDArray> create_state(const nd::NDArray& weight) const override;
  void update(long t, nd::NDArray& weight, const nd::NDArray& grad,
              std::vector<nd::NDArray>& state) const override;
  void update_all(long t, std::span<const ParameterUpdate> updates) const override;
  std::string name() const override { return "sgd"; }
  double momentum() const { return momentum_; }

 private:
  double momentum_;
};

class Adam : public Optimizer {
 public:
  explicit Adam(double learning_rate = 0.001, double beta1 = 0.9, double beta2 = 0.999,
                double epsilon = 1e-8, double wd = 0.0);  // beta1, beta2 in [0, 1), epsilon > 0
  std::vector<nd::NDArray> create_state(const nd::NDArray& weight) const override;
  void update(long t, nd::NDArray& weight, const nd::NDArray& grad,
              std::vector<nd::NDArray>& state) const override;
  void update_all(long t, std::span<const ParameterUpdate> updates) const override;
  std::string name() const override { return "adam"; }
  bool update_reads_step_count() const override { return true; }

 private:
  // The update's options at step t: the learning rate with this step's bias corrections.
  nd::AdamUpdateOptions options_at(long t) const;

  double beta1_, beta2_, epsilon_;
};

}  // namespace tandem::nn
