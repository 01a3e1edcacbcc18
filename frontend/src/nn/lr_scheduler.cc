#include "tandem/nn/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "tandem/errors.h"

namespace tandem::nn {

namespace {

void require(bool condition, const char* schedule, const std::string& what) {
  if (!condition) throw Error(std::string("tandem: ") + schedule + ": " + what);
}

void check_step(const char* schedule, long step) {
  require(step >= 0, schedule, "the step must be >= 0, got " + std::to_string(step));
}

void check_rate(const char* schedule, const char* name, double value) {
  require(std::isfinite(value) && value >= 0, schedule,
          std::string(name) + " must be a finite value >= 0, got " + std::to_string(value));
}

}  // namespace

FactorScheduler::FactorScheduler(double base_lr, long step_size, double factor, double min_lr)
    : base_lr_(base_lr), step_size_(step_size), factor_(factor), min_lr_(min_lr) {
  check_rate("FactorScheduler", "base_lr", base_lr);
  check_rate("FactorScheduler", "min_lr", min_lr);
  require(step_size >= 1, "FactorScheduler",
          "step_size must be >= 1, got " + std::to_string(step_size));
  require(factor > 0 && factor <= 1, "FactorScheduler",
          "factor must be in (0, 1], got " + std::to_string(factor));
}

double FactorScheduler::learning_rate(long step) const {
  check_step("FactorScheduler", step);
  const double lr = base_lr_ * std::pow(factor_, static_cast<double>(step / step_size_));
  return std::max(lr, min_lr_);
}

std::string FactorScheduler::describe() const {
  return "Factor(" + std::to_string(base_lr_) + " x " + std::to_string(factor_) + " every " +
         std::to_string(step_size_) + " steps)";
}

MultiFactorScheduler::MultiFactorScheduler(double base_lr, std::vector<long> milestones,
                                           double factor)
    : base_lr_(base_lr), milestones_(std::move(milestones)), factor_(factor) {
  check_rate("MultiFactorScheduler", "base_lr", base_lr);
  require(factor > 0 && factor <= 1, "MultiFactorScheduler",
          "factor must be in (0, 1], got " + std::to_string(factor));
  for (std::size_t i = 0; i < milestones_.size(); ++i) {
    require(milestones_[i] >= 1 && (i == 0 || milestones_[i] > milestones_[i - 1]),
            "MultiFactorScheduler",
            "the milestones must be >= 1 and strictly increase, got " +
                std::to_string(milestones_[i]) + " at position " + std::to_string(i));
  }
}

double MultiFactorScheduler::learning_rate(long step) const {
  check_step("MultiFactorScheduler", step);
  const auto reached = std::upper_bound(milestones_.begin(), milestones_.end(), step);
  return base_lr_ * std::pow(factor_, static_cast<double>(reached - milestones_.begin()));
}

std::string MultiFactorScheduler::describe() const {
  return "MultiFactor(" + std::to_string(base_lr_) + " x " + std::to_string(factor_) + " at " +
         std::to_string(milestones_.size()) + " milestones)";
}

CosineScheduler::CosineScheduler(double base_lr, long max_steps, double final_lr)
    : base_lr_(base_lr), max_steps_(max_steps), final_lr_(final_lr) {
  check_rate("CosineScheduler", "base_lr", base_lr);
  check_rate("CosineScheduler", "final_lr", final_lr);
  require(max_steps >= 1, "CosineScheduler",
          "max_steps must be >= 1, got " + std::to_string(max_steps));
}

double CosineScheduler::learning_rate(long step) const {
  check_step("CosineScheduler", step);
  if (step >= max_steps_) return final_lr_;
  const double phase =
      std::numbers::pi * static_cast<double>(step) / static_cast<double>(max_steps_);
  return final_lr_ + (base_lr_ - final_lr_) * (1.0 + std::cos(phase)) / 2.0;
}

std::string CosineScheduler::describe() const {
  return "Cosine(" + std::to_string(base_lr_) + " -> " + std::to_string(final_lr_) + ", " +
         std::to_string(max_steps_) + " steps)";
}

WarmUp::WarmUp(std::shared_ptr<const LRScheduler> after, long warmup_steps, double start_lr)
    : after_(std::move(after)), warmup_steps_(warmup_steps), start_lr_(start_lr) {
  require(after_ != nullptr, "WarmUp", "the schedule after the warm-up is null");
  require(warmup_steps >= 0, "WarmUp",
          "warmup_steps must be >= 0, got " + std::to_string(warmup_steps));
  check_rate("WarmUp", "start_lr", start_lr);
}

double WarmUp::learning_rate(long step) const {
  check_step("WarmUp", step);
  if (step >= warmup_steps_) return after_->learning_rate(step - warmup_steps_);
  const double target = after_->learning_rate(0);
  return start_lr_ +
         (target - start_lr_) * static_cast<double>(step) / static_cast<double>(warmup_steps_);
}

std::string WarmUp::describe() const {
  return "WarmUp(" + std::to_string(warmup_steps_) + " steps from " + std::to_string(start_lr_) +
         ", then " + after_->describe() + ")";
}

}  // namespace tandem::nn
