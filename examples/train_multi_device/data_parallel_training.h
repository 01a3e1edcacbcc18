// Data-parallel training of a models.h network on the digits: train_multi_device's loop,
// shared with bench/multi_device.
//
//   DataParallelTraining training(digits, {.model = "lenet_bn", .devices = {sim(0), sim(1)}});
//   DataParallelEpoch epoch = training.run_epoch(/*profile=*/true);
//
// Each global batch (on the cpu, from the DataLoader) is split over the devices
// (nd::split_and_load: part d copied to device d on its copy queue); every device runs the
// forward of its part and its own backward; the Trainer, in during_backward mode, queues each
// parameter's allreduce from inside the backward that finishes it on the last device, so the
// exchange of the last layers overlaps the backward of the first ones; step() queues the
// updates. Nothing waits inside an epoch; the end-of-epoch numbers are the only sync point.
//
// BatchNorm normalizes over each device's part of the batch (as Gluon and PyTorch's
// DataParallel do without a synchronized BatchNorm), so with lenet_bn several devices are not
// the same computation as one; with lenet they are, up to the order of the float sums.
#pragma once

#include <tandem/nd/autograd.h>
#include <tandem/nd/multi_device.h>
#include <tandem/nd/network.h>
#include <tandem/nd/random.h>
#include <tandem/nn/nn.h>
#include <tandem/profiler.h>
#include <tandem/tandem.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epoch_result.h"
#include "exchange_overlap.h"
#include "models.h"

namespace tandem::examples {

struct DataParallelOptions {
  std::string model = "lenet_bn";
  std::vector<Device> devices{sim(0)};
  std::int64_t batch_size = 128;  // the global batch, split over the devices
  double learning_rate = 0.1;
  double momentum = 0.9;
  double weight_decay = 5e-4;
  std::uint64_t seed = 1;
  nn::GradientExchangeMode exchange = nn::GradientExchangeMode::during_backward;
  // during_backward: most gradient bytes summed by one allreduce (0: one per parameter).
  std::size_t bucket_bytes = nn::GradientExchangeOptions{}.bucket_bytes;
};

// An epoch's numbers (the test accuracy measured on devices[0]) and, when profiled, how much
// the gradient exchange overlapped compute.
struct DataParallelEpoch : EpochResult {
  bool profiled = false;
  ExchangeOverlap exchange;  // when profiled and there are several devices
};

class DataParallelTraining {
 public:
  DataParallelTraining(const data::DigitsDataSet& digits, const DataParallelOptions& options)
      : options_(options),
        net_(require_model(options.model)),
        loader_(digits.train.images, digits.train.labels,
                {.batch_size = options.batch_size,
                 .shuffle = true,
                 .seed = options.seed,
                 .last_batch = data::LastBatch::discard,
                 .device = cpu()}) {
    if (options.devices.empty()) throw Error("DataParallelTraining: no devices");
    if (options.batch_size < static_cast<std::int64_t>(options.devices.size())) {
      throw Error("DataParallelTraining: a batch of " + std::to_string(options.batch_size) +
                  " cannot be split over " + std::to_string(options.devices.size()) + " devices");
    }
    const Device first = options.devices.front();
    test_images_ = digits.test.images.copyto(first);
    test_labels_ = digits.test.labels.copyto(first);
    nd::random::seed(options.seed);
    net_->initialize(nn::Xavier(), options.devices);
    // The first forward fixes the deferred shapes (copies on every device), so that the
    // Trainer sees every parameter.
    {
      auto predicting = autograd::predict_mode();
      (*net_)(test_images_.slice(0, 1));
    }
    trainer_ = std::make_unique<nn::Trainer>(
        net_->collect_params(),
        nn::SGD(options.learning_rate, options.momentum, options.weight_decay),
        nn::TrainerOptions{.exchange = options.exchange,
                           .exchange_options = {.bucket_bytes = options.bucket_bytes}});
  }

  // One pass over the training set (or its first `max_batches` batches, when >= 0). With
  // `profile` the profiler records the epoch and the result carries the exchange's overlap
  // with compute.
  DataParallelEpoch run_epoch(bool profile = false, std::int64_t max_batches = -1) {
    const std::vector<Device>& devices = options_.devices;
    BackwardWindows backward_windows;
    if (profile) {
      profiler::start();
      backward_windows.start();
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<nd::NDArray> loss_sums(devices.size()), correct(devices.size());
    std::int64_t samples = 0;
    std::int64_t batches = 0;
    for (const data::Batch& batch : loader_) {
      if (max_batches >= 0 && batches++ == max_batches) break;
      const std::int64_t rows = batch.data.shape()[0];
      const std::vector<nd::NDArray> images = nd::split_and_load(batch.data, devices, false);
      const std::vector<nd::NDArray> labels = nd::split_and_load(batch.label, devices, false);
      std::vector<nd::NDArray> logits(devices.size()), losses(devices.size());
      {
        auto recording = autograd::record();
        for (std::size_t d = 0; d < devices.size(); ++d) {
          logits[d] = (*net_)(images[d]);
          losses[d] = nd::softmax_cross_entropy(logits[d], labels[d]).sum();
        }
      }
      // One backward per device, in device order: the exchange of a parameter is queued from
      // inside the last device's backward, as soon as that backward has queued the
      // parameter's gradient.
      backward_windows.begin();
      for (const nd::NDArray& loss : losses) loss.backward();
      backward_windows.end();
      trainer_->step(rows);
      for (std::size_t d = 0; d < devices.size(); ++d) {
        const double part_rows = static_cast<double>(images[d].shape()[0]);
        const nd::NDArray part_correct = nd::accuracy(logits[d], labels[d]) * part_rows;
        const nd::NDArray loss = losses[d].detach();
        loss_sums[d] = loss_sums[d].defined() ? loss_sums[d] + loss : loss;
        correct[d] = correct[d].defined() ? correct[d] + part_correct : part_correct;
      }
      samples += rows;
    }
    DataParallelEpoch result;
    result.epoch = ++epochs_;
    for (std::size_t d = 0; d < devices.size(); ++d) {
      if (!loss_sums[d].defined()) continue;
      result.loss += loss_sums[d].scalar<double>();
      result.train_accuracy += correct[d].scalar<double>();
    }
    // The sums above waited for the losses; the last updates may still be running.
    for (const auto& entry : net_->collect_params()) {
      for (const nd::NDArray& copy : entry.second->list_data()) copy.wait_to_read();
    }
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double count = static_cast<double>(samples > 0 ? samples : 1);
    result.loss /= count;
    result.train_accuracy /= count;
    if (profile) {
      Engine::get().wait_all();
      profiler::stop();
      result.profiled = true;
      result.exchange = exchange_overlap(profiler::events(), backward_windows);
    }
    result.test_accuracy = test_accuracy();
    return result;
  }

  double test_accuracy() {
    auto predicting = autograd::predict_mode();
    return nd::accuracy((*net_)(test_images_), test_labels_).scalar<double>();
  }

  std::int64_t batches_per_epoch() const { return loader_.batches_in_next_epoch(); }
  nn::Block& net() { return *net_; }
  nn::Trainer& trainer() { return *trainer_; }

 private:
  DataParallelOptions options_;
  std::shared_ptr<nn::Block> net_;
  data::DataLoader loader_;
  nd::NDArray test_images_, test_labels_;
  std::unique_ptr<nn::Trainer> trainer_;
  int epochs_ = 0;
};

}  // namespace tandem::examples
