// Learning-rate schedules (MXNet's mx.lr_scheduler): the learning rate as a function of the
// number of updates done so far. A Trainer given one sets its learning rate before each update.
//
//   auto cosine = std::make_shared<nn::CosineScheduler>(0.1, /*max_steps=*/1000);
//   auto schedule = std::make_shared<nn::WarmUp>(cosine, /*warmup_steps=*/100);
//   trainer.set_lr_scheduler(schedule);   // step t uses schedule->learning_rate(t), t from 0
//
// Schedules compose: WarmUp wraps any schedule and starts it after the warm-up, so the wrapped
// schedule sees steps counted from 0 again. They are pure functions of the step (no state), so
// a resumed Trainer (load_states restores the step count) continues the same curve.
// Constructors throw tandem::Error for meaningless settings, naming the schedule and the value.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tandem::nn {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  // The learning rate of the update that follows `step` updates (step >= 0).
  virtual double learning_rate(long step) const = 0;
  // "Cosine(0.1 -> 0, 1000 steps)", for messages and logs.
  virtual std::string describe() const = 0;
};

// base_lr * factor^floor(step / step_size), never below min_lr.
class FactorScheduler : public LRScheduler {
 public:
  FactorScheduler(double base_lr, long step_size, double factor, double min_lr = 0.0);
  double learning_rate(long step) const override;
  std::string describe() const override;

 private:
  double base_lr_;
  long step_size_;
  double factor_, min_lr_;
};

// base_lr times `factor` once for each milestone reached (step >= milestone); the milestones
// strictly increase.
class MultiFactorScheduler : public LRScheduler {
 public:
  MultiFactorScheduler(double base_lr, std::vector<long> milestones, double factor);
  double learning_rate(long step) const override;
  std::string describe() const override;

 private:
  double base_lr_;
  std::vector<long> milestones_;
  double factor_;
};

// final_lr + (base_lr - final_lr) * (1 + cos(pi * step / max_steps)) / 2 up to max_steps, then
// final_lr.
class CosineScheduler : public LRScheduler {
 public:
  CosineScheduler(double base_lr, long max_steps, double final_lr = 0.0);
  double learning_rate(long step) const override;
  std::string describe() const override;

 private:
  double base_lr_;
  long max_steps_;
  double final_lr_;
};

// A linear ramp from start_lr to after->learning_rate(0) over warmup_steps updates, then
// `after` with the step counted from the end of the warm-up.
class WarmUp : public LRScheduler {
 public:
  WarmUp(std::shared_ptr<const LRScheduler> after, long warmup_steps, double start_lr = 0.0);
  double learning_rate(long step) const override;
  std::string describe() const override;

 private:
  std::shared_ptr<const LRScheduler> after_;
  long warmup_steps_;
  double start_lr_;
};

}  // namespace tandem::nn
