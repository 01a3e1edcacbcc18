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
#include <tandem/nd/network.h>
#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "models.h"

namespace tandem::examples {

struct TrainingOptions {
  std::string model = "lenet";
  Device device = cpu();
  std::int64_t batch_size = 64;
  std::string optimizer = "sgd";  // sgd (with momentum) or adam
  double learning_rate = 0.1;
  double momentum = 0.9;
  std::uint64_t seed = 1;  // initial weights and shuffling
};

struct EpochResult {
  int epoch = 0;              // from 1
  double loss = 0;            // mean training loss over the epoch
  double train_accuracy = 0;  // on the training batches, as they were trained
  double test_accuracy = 0;   // after the epoch, in prediction mode
  double seconds = 0;         // the epoch's training (to its end-of-epoch sync), no test
};

class DigitsTraining {
 public:
  DigitsTraining(const data::DigitsDataSet& digits, const TrainingOptions& options)
      : options_(options),
        net_(make_model(options.model)),
        loader_(digits.train.images, digits.train.labels,
                {.batch_size = options.batch_size,
                 .shuffle = true,
                 .seed = options.seed,
                 .last_batch = data::LastBatch::keep,
                 .device = options.device}),
        test_images_(digits.test.images.copyto(options.device)),
        test_labels_(digits.test.labels.copyto(options.device)) {
    if (!net_) {
      throw Error("no model called '" + options.model + "' (there are: " + model_names() + ")");
    }
    nd::random::seed(options.seed);
    net_->initialize(nn::Xavier(), {options.device});
    std::shared_ptr<nn::Optimizer> optimizer;
    if (options.optimizer == "sgd") {
      optimizer = std::make_shared<nn::SGD>(options.learning_rate, options.momentum);
    } else if (options.optimizer == "adam") {
      optimizer = std::make_shared<nn::Adam>(options.learning_rate);
    } else {
      throw Error("no optimizer called '" + options.optimizer + "' (sgd, adam)");
    }
    // The first forward fixes the deferred shapes, so that the Trainer sees every parameter.
    (*net_)(test_images_.slice(0, 1));
    trainer_ = std::make_unique<nn::Trainer>(net_->collect_params(), optimizer);
  }

  // One pass over the training set, then the numbers (a sync point) and the test accuracy.
  EpochResult run_epoch() {
    const auto start = std::chrono::steady_clock::now();
    nd::NDArray loss_sum, correct;
    std::int64_t samples = 0;
    for (const data::Batch& batch : loader_) {
      const std::int64_t rows = batch.data.shape()[0];
      nd::NDArray logits, loss;
      {
        auto recording = autograd::record();
        logits = (*net_)(batch.data);
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
  nn::Trainer& trainer() { return *trainer_; }

 private:
  TrainingOptions options_;
  std::shared_ptr<nn::Block> net_;
  data::DataLoader loader_;
  nd::NDArray test_images_, test_labels_;
  std::unique_ptr<nn::Trainer> trainer_;
  int epochs_ = 0;
};

}  // namespace tandem::examples
