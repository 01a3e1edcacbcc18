// Training a model of models.h on the digits, one epoch at a time: the loop of train_lenet,
// shared with bench/training.
//
//   DigitsTraining training(tandem::data::load_digits("data/digits"), {.model = "lenet"});
//   EpochResult epoch = training.run_epoch();   // epoch.loss, .train_accuracy, .test_accuracy
//
// Inside an epoch nothing waits: the DataLoader queues the next batch's copies while the step
// runs, the loss and the accuracy are summed on the device, and the Trainer's updates are engine
// ops. The only sync point is the end of the epoch, where the sums are read for the print.
#pragma once

#include <tandem/nd/autograd.h>
#include <tandem/nd/convolution.h>
#include <tandem/nd/network.h>
#include <tandem/nd/random.h>
#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "epoch_result.h"
#include "models.h"

namespace tandem::examples {

// The nine 3x3 shift kernels (9, 1, 3, 3): conv2d with padding 1 and kernel k moves an image by
// (k / 3 - 1, k % 3 - 1) * `pixels` (bilinear interpolation for a fraction of a pixel, zeros
// coming in at the border); kernel 4 is the identity.
inline nd::NDArray shift_kernels(double pixels, Device device) {
  std::vector<float> kernels(9 * 9, 0.0f);
  const auto weights = [&](int direction, int tap) {  // 1-D: direction and tap in -1, 0, 1
    if (direction == 0) return tap == 0 ? 1.0 : 0.0;
    return tap == 0 ? 1.0 - pixels : (tap == -direction ? pixels : 0.0);
  };
  for (int k = 0; k < 9; ++k) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        kernels[static_cast<std::size_t>(k * 9 + i * 3 + j)] =
            static_cast<float>(weights(k / 3 - 1, i - 1) * weights(k % 3 - 1, j - 1));
      }
    }
  }
  return nd::from_vector(kernels, {9, 1, 3, 3}, device);
}

// Each image of a (batch, h, w) batch shifted by a random -1, 0 or +1 pixel along each axis,
// as queued ops (nothing waits): one conv2d computes the nine shifts, and a one-hot mask drawn
// from nd::random's default generator keeps one of them per image.
inline nd::NDArray random_shift(const nd::NDArray& images, const nd::NDArray& kernels) {
  const auto& shape = images.shape();
  const std::int64_t rows = shape[0];
  const nd::NDArray shifts =
      nd::conv2d(images.reshape({rows, 1, shape[1], shape[2]}), kernels, {.padding = 1});
  const nd::NDArray pick = nd::random::uniform(0.0, 9.0, {rows, 1}, images.device());
  const nd::NDArray index = nd::arange(0, 9, 1, images.dtype(), images.device()).reshape({1, 9});
  const nd::NDArray mask = (pick >= index) * (pick < index + 1.0);
  return (shifts * mask.reshape({rows, 9, 1, 1})).sum(1);
}

// The defaults are the recipe that reaches 0.97 test accuracy on the digits in 20 epochs (see
// docs/benchmarks.md, "lenet_digits: what was tried"): lenet_bn, random 1-pixel shifts, weight
// decay 5e-4, a cosine learning rate over the 20 epochs.
struct TrainingOptions {
  std::string model = "lenet_bn";
  Device device = cpu();
  std::int64_t batch_size = 64;
  std::string optimizer = "sgd";  // sgd (with momentum) or adam
  double learning_rate = 0.1;
  double momentum = 0.9;
  double weight_decay = 5e-4;  // L2 on every parameter (the optimizer's wd)
  // When > 0, each training image is shifted by a random -shift, 0 or +shift pixels along each
  // axis (at most 1; a fraction interpolates).
  double shift = 1;
  std::uint64_t seed = 1;  // initial weights and shuffling
  // When > 0, the learning rate follows a cosine from learning_rate down to 0 over this many
  // epochs (set before each step, on the host); 0 keeps it constant.
  int schedule_epochs = 20;
  bool standardize = false;  // images as (x - mean) / std of the training pixels, else as loaded
};

class DigitsTraining {
 public:
  DigitsTraining(const data::DigitsDataSet& digits, const TrainingOptions& options)
      : options_(options),
        net_(require_model(options.model)),
        loader_(digits.train.images, digits.train.labels,
                {.batch_size = options.batch_size,
                 .shuffle = true,
                 .seed = options.seed,
                 .last_batch = data::LastBatch::keep,
                 .device = options.device}),
        test_images_(digits.test.images.copyto(options.device)),
        test_labels_(digits.test.labels.copyto(options.device)),
        shift_kernels_(shift_kernels(options.shift > 0 ? options.shift : 1, options.device)) {
    if (options.standardize) {
      // One sync before training: the training set's pixel mean and standard deviation.
      const nd::NDArray& images = digits.train.images;
      mean_ = images.mean().scalar<double>();
      const double variance = nd::square(images - mean_).mean().scalar<double>();
      scale_ = 1.0 / std::sqrt(variance);
      test_images_ = (test_images_ - mean_) * scale_;
    }
    nd::random::seed(options.seed);
    net_->initialize(nn::Xavier(), {options.device});
    std::shared_ptr<nn::Optimizer> optimizer;
    if (options.optimizer == "sgd") {
      optimizer =
          std::make_shared<nn::SGD>(options.learning_rate, options.momentum, options.weight_decay);
    } else if (options.optimizer == "adam") {
      optimizer =
          std::make_shared<nn::Adam>(options.learning_rate, 0.9, 0.999, 1e-8, options.weight_decay);
    } else {
      throw Error("no optimizer called '" + options.optimizer + "' (sgd, adam)");
    }
    // The first forward fixes the deferred shapes, so that the Trainer sees every parameter.
    (*net_)(test_images_.slice(0, 1));
    trainer_ = std::make_unique<nn::Trainer>(net_->collect_params(), optimizer);
    total_steps_ = loader_.batches_in_next_epoch() * std::max(options.schedule_epochs, 1);
  }

  // One pass over the training set, then the numbers (a sync point) and the test accuracy.
  EpochResult run_epoch() {
    const auto start = std::chrono::steady_clock::now();
    nd::NDArray loss_sum, correct;
    std::int64_t samples = 0;
    for (const data::Batch& batch : loader_) {
      const std::int64_t rows = batch.data.shape()[0];
      nd::NDArray images =
          options_.shift > 0 ? random_shift(batch.data, shift_kernels_) : batch.data;
      if (options_.standardize) images = (images - mean_) * scale_;
      if (options_.schedule_epochs > 0) {
        const double progress =
            std::min(1.0, static_cast<double>(steps_) / static_cast<double>(total_steps_));
        trainer_->optimizer().set_learning_rate(options_.learning_rate * 0.5 *
                                                (1.0 + std::cos(std::numbers::pi * progress)));
      }
      ++steps_;
      nd::NDArray logits, loss;
      {
        auto recording = autograd::record();
        logits = (*net_)(images);
        loss = nd::softmax_cross_entropy(logits, batch.label).sum();
      }
      loss.backward();
      trainer_->step(rows);
      const nd::NDArray batch_correct =
          nd::accuracy(logits, batch.label) * static_cast<double>(rows);
      loss_sum = loss_sum.defined() ? loss_sum + loss : loss;
      correct = correct.defined() ? correct + batch_correct : batch_correct;
      samples += rows;
    }
    EpochResult result;
    result.epoch = ++epochs_;
    result.loss = loss_sum.scalar<double>() / static_cast<double>(samples);
    result.train_accuracy = correct.scalar<double>() / static_cast<double>(samples);
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.test_accuracy = test_accuracy();
    return result;
  }

  double test_accuracy() {
    return nd::accuracy((*net_)(test_images_), test_labels_).scalar<double>();
  }

  nn::Block& net() { return *net_; }
  // The test set on the device, as the network sees it (standardized when that is on).
  const nd::NDArray& test_images() const { return test_images_; }
  const nd::NDArray& test_labels() const { return test_labels_; }
  nn::Trainer& trainer() { return *trainer_; }

 private:
  TrainingOptions options_;
  std::shared_ptr<nn::Block> net_;
  data::DataLoader loader_;
  nd::NDArray test_images_, test_labels_;
  nd::NDArray shift_kernels_;
  std::unique_ptr<nn::Trainer> trainer_;
  int epochs_ = 0;
  double mean_ = 0, scale_ = 1;
  std::int64_t steps_ = 0, total_steps_ = 1;
};

}  // namespace tandem::examples
