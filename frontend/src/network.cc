// Network operators, composed of the element-wise and reduction ops. softmax, log_softmax and
// softmax_cross_entropy compute their forward pass with recording paused and record one node
// with a fused gradient rule (fewer saved arrays, and the rules that keep them stable);
// dropout and batch_norm are recorded op by op.
#include "tandem/nd/network.h"

#include <string>

#include "access.h"
#include "autograd/tape.h"
#include "checks.h"
#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/random.h"
#include "tandem/nd/reduce.h"

namespace tandem::nd {

namespace {

void check_floating_input(const char* op, const NDArray& x) {
  detail::check_defined(op, x);
  detail::check_floating(op, x.dtype());
}

int checked_axis(const char* op, const NDArray& x, int axis) {
  if (x.ndim() == 0) throw Error(std::string("tandem: ") + op + ": a 0-d array has no axis");
  return ops::normalize_axis(axis, x.shape(), op);
}

// The classes N x C and labels N of a classification op.
void check_classification(const char* op, const NDArray& logits, const NDArray& labels) {
  check_floating_input(op, logits);
  detail::check_defined(op, labels);
  if (ops::is_floating(labels.dtype())) {
    throw Error(std::string("tandem: ") + op + ": labels must be integer class indices, got " +
                dtype_name(labels.dtype()) + " (astype(int32) first)");
  }
  if (logits.ndim() != 2 || labels.ndim() != 1 || labels.shape()[0] != logits.shape()[0]) {
    throw Error(std::string("tandem: ") + op +
                ": expects logits of shape N x C and labels of shape N, got " +
                logits.shape().to_string() + " and " + labels.shape().to_string());
  }
  detail::check_same_place(op, {&logits, &labels});
}

// The forward pass of log_softmax (no recording).
NDArray log_softmax_values(const NDArray& x, int axis) {
  const NDArray shifted = x - nd::max(x, axis, true);
  return shifted - nd::log(nd::sum(nd::exp(shifted), axis, true));
}

}  // namespace

NDArray softmax(const NDArray& x, int axis) {
  check_floating_input("softmax", x);
  axis = checked_axis("softmax", x, axis);
  const bool record = autograd::should_record({&x});
  NDArray y;
  {
    const auto paused = autograd::pause(autograd::is_training());
    const NDArray e = nd::exp(x - nd::max(x, axis, true));
    y = e / nd::sum(e, axis, true);
  }
  if (record) {
    autograd::detail::Saver save;
    const NDArray saved_y = save(y);
    autograd::detail::record_node(
        "softmax", {x}, {&y}, save.take(), [saved_y, axis](const std::vector<NDArray>& g) {
          // dx = y * (g - sum(g * y))
          return std::vector<NDArray>{saved_y * (g[0] - nd::sum(g[0] * saved_y, axis, true))};
        });
  }
  return y;
}

NDArray log_softmax(const NDArray& x, int axis) {
  check_floating_input("log_softmax", x);
  axis = checked_axis("log_softmax", x, axis);
  const bool record = autograd::should_record({&x});
  NDArray y;
  {
    const auto paused = autograd::pause(autograd::is_training());
    y = log_softmax_values(x, axis);
  }
  if (record) {
    autograd::detail::Saver save;
    const NDArray saved_y = save(y);
    autograd::detail::record_node(
        "log_softmax", {x}, {&y}, save.take(), [saved_y, axis](const std::vector<NDArray>& g) {
          // dx = g - softmax(x) * sum(g)
          return std::vector<NDArray>{g[0] - nd::exp(saved_y) * nd::sum(g[0], axis, true)};
        });
  }
  return y;
}

NDArray one_hot(const NDArray& labels, std::int64_t depth, DType dtype) {
  detail::check_defined("one_hot", labels);
  detail::check_dtype("one_hot", dtype);
  if (ops::is_floating(labels.dtype())) {
    throw Error(std::string("tandem: one_hot: labels must be integer class indices, got ") +
                dtype_name(labels.dtype()) + " (astype(int32) first)");
  }
  if (depth < 1) {
    throw Error("tandem: one_hot: depth must be at least 1, got " + std::to_string(depth));
  }
  Shape column = labels.shape();
  column.push_back(1);
  const auto paused = autograd::pause(autograd::is_training());
  // Through float64: exact for every index an array can have.
  const NDArray classes = nd::arange(0, static_cast<double>(depth), 1, float64, labels.device());
  NDArray hits = nd::equal(labels.reshape(column).astype(float64), classes);
  return dtype == float64 ? hits : hits.astype(dtype);
}

NDArray softmax_cross_entropy(const NDArray& logits, const NDArray& labels) {
  check_classification("softmax_cross_entropy", logits, labels);
  const bool record = autograd::should_record({&logits});
  NDArray loss;
  NDArray gradient;  // softmax - one_hot, what the rule scales
  {
    const auto paused = autograd::pause(autograd::is_training());
    const NDArray log_p = log_softmax_values(logits, 1);
    const NDArray truth = one_hot(labels, logits.shape()[1], logits.dtype());
    loss = nd::negative(nd::sum(truth * log_p, 1));
    if (record) gradient = nd::exp(log_p) - truth;
  }
  if (record) {
    autograd::detail::Saver save;
    const NDArray saved = save(gradient);
    const std::int64_t rows = logits.shape()[0];
    autograd::detail::record_node(
        "softmax_cross_entropy", {logits, labels}, {&loss}, save.take(),
        [saved, rows](const std::vector<NDArray>& g) {
          return std::vector<NDArray>{saved * g[0].reshape({rows, 1}), NDArray()};
        });
  }
  return loss;
}

NDArray accuracy(const NDArray& logits, const NDArray& labels) {
  check_classification("accuracy", logits, labels);
  const auto paused = autograd::pause(autograd::is_training());
  const NDArray predicted = nd::argmax(logits, 1).astype(float32);
  return nd::mean(nd::equal(predicted, labels.astype(float32))).reshape(Shape());
}

NDArray flatten(const NDArray& x) {
  detail::check_defined("flatten", x);
  if (x.ndim() == 0) throw Error("tandem: flatten: a 0-d array has no axis 0 to keep");
  const std::int64_t rows = x.shape()[0];
  return x.reshape({rows, rows == 0 ? 0 : x.size() / rows});
}

namespace {

NDArray dropout_with(const NDArray& x, double p, random::Generator* generator) {
  check_floating_input("dropout", x);
  if (!(p >= 0.0 && p < 1.0)) {
    throw Error("tandem: dropout: p must be in [0, 1), got " + std::to_string(p));
  }
  if (!autograd::is_training() || p == 0.0) return x;
  NDArray mask;
  {
    const auto paused = autograd::pause(true);
    const NDArray u = random::uniform(
        x.shape(), {.dtype = x.dtype(), .device = x.device(), .generator = generator});
    mask = (u >= p) * (1.0 / (1.0 - p));
  }
  return x * mask;  // recorded as a product with the (saved) mask
}

}  // namespace

NDArray dropout(const NDArray& x, double p, std::uint64_t seed) {
  detail::check_defined("dropout", x);
  if (!autograd::is_training() || p == 0.0) return dropout_with(x, p, nullptr);
  random::Generator generator(seed, x.engine());
  return dropout_with(x, p, &generator);
}

NDArray dropout(const NDArray& x, double p) {
  return dropout_with(x, p, nullptr);
}

NDArray batch_norm(const NDArray& x, const NDArray& gamma, const NDArray& beta,
                   const NDArray& running_mean, const NDArray& running_var, double momentum,
                   double eps) {
  const char* op = "batch_norm";
  check_floating_input(op, x);
  if (x.ndim() < 2) {
    throw Error("tandem: batch_norm: x must be N x C x ..., got shape " + x.shape().to_string());
  }
  const std::int64_t channels = x.shape()[1];
  for (const NDArray* parameter : {&gamma, &beta, &running_mean, &running_var}) {
    detail::check_same_place(op, {&x, parameter});
    detail::check_same_dtype(op, x, *parameter);
    if (parameter->size() != channels || parameter->ndim() != 1) {
      throw Error("tandem: batch_norm: gamma, beta, running_mean and running_var must have shape " +
                  std::to_string(channels) + " (the channels of x, shape " + x.shape().to_string() +
                  "), got " + parameter->shape().to_string());
    }
  }
  if (!(eps > 0.0) || !(momentum >= 0.0 && momentum <= 1.0)) {
    throw Error("tandem: batch_norm: needs eps > 0 and momentum in [0, 1], got eps " +
                std::to_string(eps) + " and momentum " + std::to_string(momentum));
  }
  // Per-channel arrays shaped 1 x C x 1 ... to broadcast against x.
  Shape per_channel;
  for (int axis = 0; axis < x.ndim(); ++axis) per_channel.push_back(axis == 1 ? channels : 1);
  const NDArray scale = gamma.reshape(per_channel), shift = beta.reshape(per_channel);
  if (!autograd::is_training()) {
    const NDArray inverse_std = 1.0 / nd::sqrt(running_var.reshape(per_channel) + eps);
    return (x - running_mean.reshape(per_channel)) * (inverse_std * scale) + shift;
  }
  const auto channel_mean = [&](const NDArray& values) {
    NDArray m = nd::mean(values, 0, true);
    for (int axis = 2; axis < x.ndim(); ++axis) m = nd::mean(m, axis, true);
    return m;
  };
  const NDArray mean = channel_mean(x);
  const NDArray centered = x - mean;
  const NDArray variance = channel_mean(nd::square(centered));
  const NDArray y = centered * (scale / nd::sqrt(variance + eps)) + shift;
  {
    const auto paused = autograd::pause(true);
    NDArray rm = running_mean.detach(), rv = running_var.detach();
    rm *= momentum;
    rm += mean.detach().reshape({channels}) * (1.0 - momentum);
    rv *= momentum;
    rv += variance.detach().reshape({channels}) * (1.0 - momentum);
  }
  return y;
}

}  // namespace tandem::nd
