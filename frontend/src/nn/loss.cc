#include "tandem/nn/loss.h"

#include <string>

#include "tandem/device.h"
#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/network.h"
#include "tandem/nd/reduce.h"

namespace tandem::nn {

namespace {

std::string describe(const nd::NDArray& x) {
  return x.shape().to_string() + " " + ops::dtype_name(x.dtype()) + " on " + to_string(x.device());
}

void check_pair(const char* loss, const nd::NDArray& pred, const nd::NDArray& label) {
  if (!pred.defined() || !label.defined()) {
    throw Error(std::string("tandem: ") + loss + ": an argument is an empty (undefined) NDArray");
  }
  if (pred.ndim() < 1) {
    throw Error(std::string("tandem: ") + loss + ": the prediction needs a batch axis, got shape " +
                pred.shape().to_string());
  }
  if (pred.shape() != label.shape() || pred.device() != label.device() ||
      !ops::is_floating(pred.dtype()) || pred.dtype() != label.dtype()) {
    throw Error(std::string("tandem: ") + loss +
                ": prediction and label need the same shape, floating dtype and device, got " +
                describe(pred) + " and " + describe(label));
  }
}

// The mean over every axis but the first: one value per sample.
nd::NDArray per_sample(const nd::NDArray& elementwise) {
  const std::int64_t n = elementwise.shape()[0];
  if (elementwise.ndim() == 1) return elementwise;
  return elementwise.reshape({n, n == 0 ? 0 : elementwise.size() / n}).mean(1);
}

}  // namespace

nd::NDArray l2_loss(const nd::NDArray& pred, const nd::NDArray& label) {
  check_pair("l2_loss", pred, label);
  return per_sample(nd::square(pred - label) * 0.5);
}

nd::NDArray l1_loss(const nd::NDArray& pred, const nd::NDArray& label) {
  check_pair("l1_loss", pred, label);
  return per_sample(nd::abs(pred - label));
}

nd::NDArray huber_loss(const nd::NDArray& pred, const nd::NDArray& label, double rho) {
  check_pair("huber_loss", pred, label);
  if (!(rho > 0)) throw Error("tandem: huber_loss: rho must be > 0, got " + std::to_string(rho));
  // 0.5 / rho * min(|d|, rho)^2 + max(|d| - rho, 0): the quadratic part up to rho, then the
  // linear part, without a select op.
  const nd::NDArray distance = nd::abs(pred - label);
  const nd::NDArray quadratic = nd::square(nd::minimum(distance, rho)) * (0.5 / rho);
  return per_sample(quadratic + nd::maximum(distance - rho, 0.0));
}

nd::NDArray sigmoid_bce_loss(const nd::NDArray& logits, const nd::NDArray& label) {
  check_pair("sigmoid_bce_loss", logits, label);
  const nd::NDArray elementwise =
      nd::maximum(logits, 0.0) - logits * label + nd::log1p(nd::exp(-nd::abs(logits)));
  return per_sample(elementwise);
}

nd::NDArray softmax_ce_loss(const nd::NDArray& logits, const nd::NDArray& labels,
                            const SoftmaxCrossEntropyOptions& options) {
  const double eps = options.label_smoothing;
  if (!(eps >= 0.0 && eps < 1.0)) {
    throw Error("tandem: softmax_ce_loss: label_smoothing must be in [0, 1), got " +
                std::to_string(eps));
  }
  // nd::softmax_cross_entropy checks the shapes, dtypes and devices.
  const nd::NDArray cross_entropy = nd::softmax_cross_entropy(logits, labels);
  if (eps == 0.0) return cross_entropy;
  const nd::NDArray uniform = -nd::log_softmax(logits, 1).mean(1);
  return cross_entropy * (1.0 - eps) + uniform * eps;
}

}  // namespace tandem::nn
