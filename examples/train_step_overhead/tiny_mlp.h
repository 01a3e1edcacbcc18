// The tiny MLP step of train_step_overhead and bench_training's tiny_mlp_step: a 64-64-10 MLP
// at batch 16 on the digits, where the per-op cost dominates the step. Written twice: with
// autograd and the Trainer, as a user writes it, and with the same gradients written by hand.
// Both are queued only: a step never waits.
#pragma once

#include <tandem/data/digits.h>
#include <tandem/nd/autograd.h>
#include <tandem/nd/network.h>
#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tiny_mlp {

namespace nd = tandem::nd;
namespace nn = tandem::nn;

constexpr std::int64_t kBatch = 16, kInputs = 64, kHidden = 64, kClasses = 10;
constexpr double kLearningRate = 0.1;

// The training images cut into full batches of kBatch rows, each its own array (ready).
struct Batches {
  std::vector<nd::NDArray> images, labels;
};

inline Batches make_batches(const tandem::data::DigitsDataSet& digits) {
  const nd::NDArray images = digits.train.images.reshape({-1, kInputs});
  Batches batches;
  for (std::int64_t row = 0; row + kBatch <= images.shape()[0]; row += kBatch) {
    batches.images.push_back(images.slice(row, row + kBatch).copy());
    batches.labels.push_back(digits.train.labels.slice(row, row + kBatch).copy());
  }
  nd::waitall();
  return batches;
}

// Autograd and the Trainer.
class AutogradStep {
 public:
  AutogradStep() {
    net_.add(nn::Dense(kHidden, nn::relu, {.in_units = kInputs}))
        .add(nn::Dense(kClasses, nn::ActivationType::none, {.in_units = kHidden}));
    net_.initialize(nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3.0, 1));
    trainer_ = std::make_unique<nn::Trainer>(net_.collect_params(), nn::SGD(kLearningRate));
  }
  void operator()(const nd::NDArray& x, const nd::NDArray& y) {
    nd::NDArray loss;
    {
      auto recording = tandem::autograd::record();
      loss = nd::softmax_cross_entropy(net_(x), y).sum();
    }
    loss.backward();
    trainer_->step(kBatch);
  }

 private:
  nn::Sequential net_;
  std::unique_ptr<nn::Trainer> trainer_;
};

// The same network, loss and SGD step with the gradients written out.
class HandwrittenStep {
 public:
  HandwrittenStep() {
    nd::random::seed(1);
    w1_ = nd::random::normal({kHidden, kInputs}, {.stddev = 0.1});
    b1_ = nd::zeros({kHidden});
    w2_ = nd::random::normal({kClasses, kHidden}, {.stddev = 0.1});
    b2_ = nd::zeros({kClasses});
  }
  void operator()(const nd::NDArray& x, const nd::NDArray& y) {
    const nd::NDArray pre = nd::dot(x, w1_.T()) + b1_;
    const nd::NDArray h = nd::relu(pre);
    const nd::NDArray logits = nd::dot(h, w2_.T()) + b2_;
    // d (sum of the losses) / d logits = softmax(logits) - one_hot(labels).
    const nd::NDArray d_logits = nd::softmax(logits) - nd::one_hot(y, kClasses);
    const nd::NDArray d_pre = nd::dot(d_logits, w2_) * (pre > 0.0);
    const double scale = kLearningRate / static_cast<double>(kBatch);
    w2_ -= nd::dot(d_logits.T(), h) * scale;
    b2_ -= nd::sum(d_logits, 0) * scale;
    w1_ -= nd::dot(d_pre.T(), x) * scale;
    b1_ -= nd::sum(d_pre, 0) * scale;
  }

 private:
  nd::NDArray w1_, b1_, w2_, b2_;
};

// Seconds per step of `steps` steps after a 20-step warm-up, waiting only at the end.
template <class Step>
double seconds_per_step(Step& step, const Batches& batches, int steps) {
  const std::size_t count = batches.images.size();
  for (std::size_t i = 0; i < 20; ++i) step(batches.images[i % count], batches.labels[i % count]);
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    const std::size_t b = static_cast<std::size_t>(i) % count;
    step(batches.images[b], batches.labels[b]);
  }
  nd::waitall();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace tiny_mlp
