// Evaluation metrics (MXNet's mx.metric): accumulated on the device, read once at the end.
//
//   nn::Accuracy accuracy;
//   nn::TopKAccuracy top3(3);
//   nn::MeanLoss mean_loss;
//   for (const data::Batch& batch : loader) {
//     nd::NDArray logits = net(batch.data);
//     accuracy.update(batch.label, logits);     // queued: nothing waits
//     top3.update(batch.label, logits);
//     mean_loss.update(nn::softmax_ce_loss(logits, batch.label));
//   }
//   double acc = accuracy.get();                 // the one sync point
//
// update() only queues ops: each metric keeps, per device it was fed from, a 0-d float64 sum
// on that device, and the number of samples on the host (known from shapes). get() reads the
// sums (a sync point) and divides; before any update it throws tandem::Error. reset() starts
// over. Labels are N integer class indices (any integer or floating dtype holding integers);
// logits are (N, C) floating. Wrong shapes, dtypes or devices throw tandem::Error naming the
// metric and the shapes. Metrics are not recorded by autograd.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tandem/device.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nn {

class Metric {
 public:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  virtual ~Metric() = default;

  // The metric over every sample since the last reset. A sync point.
  double get() const;
  // Samples counted so far (no sync).
  std::int64_t count() const { return count_; }
  void reset();
  const std::string& name() const { return name_; }

 protected:
  // Adds `amount` (any-dtype array of one element on some device) to the sum kept on that
  // device, and `samples` to the count; queued.
  void accumulate(const nd::NDArray& amount, std::int64_t samples);

 private:
  std::string name_;
  std::vector<std::pair<Device, nd::NDArray>> sums_;  // one 0-d float64 per device
  std::int64_t count_ = 0;
};

// The fraction of samples whose largest logit is at the label's index.
class Accuracy : public Metric {
 public:
  Accuracy() : Metric("accuracy") {}
  void update(const nd::NDArray& labels, const nd::NDArray& logits);
};

// The fraction of samples whose label is among the k largest logits: fewer than k logits are
// strictly greater than the label's (so ties count in the label's favour).
class TopKAccuracy : public Metric {
 public:
  // Throws tandem::Error for k < 1.
  explicit TopKAccuracy(std::int64_t k);
  void update(const nd::NDArray& labels, const nd::NDArray& logits);
  std::int64_t k() const { return k_; }

 private:
  std::int64_t k_;
};

// The running mean of per-sample losses (any shape: every element counts as one sample).
class MeanLoss : public Metric {
 public:
  MeanLoss() : Metric("loss") {}
  void update(const nd::NDArray& losses);
};

}  // namespace tandem::nn
