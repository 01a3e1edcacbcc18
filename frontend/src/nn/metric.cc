#include "tandem/nn/metric.h"

#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/network.h"
#include "tandem/nd/reduce.h"

namespace tandem::nn {

namespace {

std::string describe(const nd::NDArray& x) {
  return x.shape().to_string() + " " + nd::dtype_name(x.dtype()) + " on " + to_string(x.device());
}

void check_classification(const std::string& metric, const nd::NDArray& labels,
                          const nd::NDArray& logits) {
  if (!labels.defined() || !logits.defined()) {
    throw Error("tandem: " + metric + ".update: an argument is an empty (undefined) NDArray");
  }
  const bool logits_ok = logits.ndim() == 2 && ops::is_floating(logits.dtype());
  const bool labels_ok =
      labels.ndim() == 1 && logits.ndim() >= 1 && labels.shape()[0] == logits.shape()[0];
  if (!logits_ok || !labels_ok || labels.device() != logits.device()) {
    throw Error("tandem: " + metric +
                ".update: needs N labels and (N, C) floating logits on one device, got labels " +
                describe(labels) + " and logits " + describe(logits));
  }
}

}  // namespace

void Metric::accumulate(const nd::NDArray& amount, std::int64_t samples) {
  const nd::NDArray value = amount.reshape({}).astype(nd::float64);
  const Device device = value.device();
  for (auto& [sum_device, sum] : sums_) {
    if (sum_device != device) continue;
    sum += value;
    count_ += samples;
    return;
  }
  sums_.emplace_back(device, value.copy());
  count_ += samples;
}

double Metric::get() const {
  if (count_ == 0) throw Error("tandem: " + name_ + ".get: no sample was counted yet");
  double total = 0;
  for (const auto& [device, sum] : sums_) total += sum.scalar<double>();
  return total / static_cast<double>(count_);
}

void Metric::reset() {
  sums_.clear();
  count_ = 0;
}

void Accuracy::update(const nd::NDArray& labels, const nd::NDArray& logits) {
  check_classification(name(), labels, logits);
  const auto paused = autograd::pause();
  const nd::NDArray predicted = nd::argmax(logits, 1).astype(nd::float64);
  accumulate(nd::equal(predicted, labels.astype(nd::float64)).sum(), labels.shape()[0]);
}

TopKAccuracy::TopKAccuracy(std::int64_t k)
    : Metric("top_" + std::to_string(k) + "_accuracy"), k_(k) {
  if (k < 1) throw Error("tandem: TopKAccuracy: k must be >= 1, got " + std::to_string(k));
}

void TopKAccuracy::update(const nd::NDArray& labels, const nd::NDArray& logits) {
  check_classification(name(), labels, logits);
  const auto paused = autograd::pause();
  const std::int64_t classes = logits.shape()[1];
  const nd::NDArray label_logit =
      (logits * nd::one_hot(labels.astype(nd::int32), classes, logits.dtype())).sum(1, true);
  const nd::NDArray above = nd::greater(logits, label_logit).astype(nd::float64).sum(1);
  accumulate((above < static_cast<double>(k_)).sum(), labels.shape()[0]);
}

void MeanLoss::update(const nd::NDArray& losses) {
  if (!losses.defined() || !ops::is_floating(losses.dtype())) {
    throw Error("tandem: loss.update: needs a floating array of losses, got " +
                (losses.defined() ? describe(losses) : std::string("an undefined NDArray")));
  }
  const auto paused = autograd::pause();
  accumulate(losses.sum(), losses.size());
}

}  // namespace tandem::nn
