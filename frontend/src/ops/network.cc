// Network operators. softmax and log_softmax over the last axis and softmax_cross_entropy are
// one fused engine op each (the softmax kernel families of ops::Kernels), forward and backward;
// softmax over another axis is composed of the element-wise and reduction ops. Each records
// one node with a fused gradient rule (fewer saved arrays, and the rules that keep them
// stable); batch_norm in training mode is one op forward and one backward (its kernel family)
// except under the export trace; dropout is recorded op by op.
#include "tandem/nd/network.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/modes.h"
#include "core/view_op.h"
#include "tandem/errors.h"
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

// The forward pass of log_softmax over a non-last axis (no recording).
NDArray log_softmax_values(const NDArray& x, int axis) {
  const NDArray shifted = x - nd::max(x, axis, true);
  return shifted - nd::log(nd::sum(nd::exp(shifted), axis, true));
}

NDArray dense(const NDArray& array) {
  return array.is_contiguous() ? array : array.copy();
}

// softmax (or log_softmax) of x over its last axis: one op (no recording).
NDArray softmax_last_axis(const NDArray& x, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  Engine& engine = x.engine();
  const NDArray in = dense(x);
  NDArray out = detail::allocate_array(engine, x.shape(), x.dtype(), x.device(), op);
  detail::push_view_op<2>(engine, out.device(), op, {detail::lazy_view(in), detail::lazy_view(out)},
                          {in.var()}, {out.var()},
                          [log](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.softmax_rows(s, v[0], v[1], log);
                          });
  return out;
}

// Its gradient from the forward output y (dense) and dy: one op (no recording).
NDArray softmax_last_axis_backward(const NDArray& y, const NDArray& dy, bool log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  Engine& engine = y.engine();
  const detail::RecordingPaused paused;
  const NDArray g = dense(dy);
  NDArray dx = detail::allocate_array(engine, y.shape(), y.dtype(), y.device(), op);
  detail::push_view_op<3>(
      engine, dx.device(), op, {detail::lazy_view(y), detail::lazy_view(g), detail::lazy_view(dx)},
      {y.var(), g.var()}, {dx.var()}, [log](const ops::Kernels& k, Stream* s, const auto& v) {
        k.softmax_rows_backward(s, v[0], v[1], v[2], log);
      });
  return dx;
}

// softmax or log_softmax along `axis` with its node.
NDArray softmax_op(const NDArray& x, int axis, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  check_floating_input(op, x);
  axis = checked_axis(op, x, axis);
  const bool last = axis == x.ndim() - 1;
  const bool record = detail::gradient_wanted({&x});
  const detail::OpModesPaused paused;  // the steps are the op's own business
  NDArray y;
  if (last) {
    y = softmax_last_axis(x, log);
  } else if (log) {
    y = log_softmax_values(x, axis);
  } else {
    const NDArray e = nd::exp(x - nd::max(x, axis, true));
    y = e / nd::sum(e, axis, true);
  }
  if (paused.any()) {
    detail::OpCall call = detail::OpCall::of(detail::OpForm::softmax, op, x, y);
    call.axis = axis;
    detail::OpGradient gradient;
    if (record) {
      gradient.inputs = {x};
      gradient.saved = {y};
      gradient.rule = [axis, last, log](const std::vector<NDArray>& g,
                                        const std::vector<NDArray>& saved) {
        const NDArray& saved_y = saved[0];
        if (last) return std::vector<NDArray>{softmax_last_axis_backward(saved_y, g[0], log)};
        // log: dx = g - softmax(x) * sum(g); else dx = y * (g - sum(g * y))
        return std::vector<NDArray>{log ? g[0] - nd::exp(saved_y) * nd::sum(g[0], axis, true)
                                        : saved_y * (g[0] - nd::sum(g[0] * saved_y, axis, true))};
      };
      call.gradient = &gradient;
    }
    paused.report(call);
  }
  return y;
}

}  // namespace

NDArray softmax(const NDArray& x, int axis) {
  return softmax_op(x, axis, false);
}

NDArray log_softmax(const NDArray& x, int axis) {
  return softmax_op(x, axis, true);
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
  const detail::RecordingPaused paused;
  // Through float64: exact for every index an array can have.
  const NDArray classes = nd::arange(0, static_cast<double>(depth), 1, float64, labels.device());
  NDArray hits = nd::equal(labels.reshape(column).astype(float64), classes);
  return dtype == float64 ? hits : hits.astype(dtype);
}

NDArray softmax_cross_entropy(const NDArray& logits, const NDArray& labels) {
  const char* op = "softmax_cross_entropy";
  check_classification(op, logits, labels);
  Engine& engine = logits.engine();
  const bool record = detail::gradient_wanted({&logits});
  const std::int64_t rows = logits.shape()[0];
  NDArray loss;
  NDArray probabilities;               // softmax(logits), what the rule needs
  NDArray classes;                     // the labels as dense int32
  const detail::OpModesPaused paused;  // the dense copies are the op's own business
  {
    const NDArray x = dense(logits);
    // The kernels take int32 labels. An int64 label outside int32's range is outside
    // [0, classes) too and must stay so, not wrap onto a class: clamp before narrowing.
    classes = labels.dtype() == int32
                  ? dense(labels)
                  : nd::minimum(nd::maximum(labels, -1.0), 2147483647.0).astype(int32);
    loss = detail::allocate_array(engine, Shape{rows}, logits.dtype(), logits.device(), op);
    if (record) {
      probabilities =
          detail::allocate_array(engine, logits.shape(), logits.dtype(), logits.device(), op);
    }
    const detail::LazyView vp = record ? detail::lazy_view(probabilities) : detail::LazyView{};
    const Var writes[2] = {loss.var(), record ? probabilities.var() : loss.var()};
    detail::push_view_op<4>(
        engine, loss.device(), op,
        {detail::lazy_view(x), detail::lazy_view(classes), detail::lazy_view(loss), vp},
        {x.var(), classes.var()}, std::span<const Var>(writes, record ? 2 : 1),
        [](const ops::Kernels& k, Stream* s, const auto& v) {
          k.softmax_cross_entropy_rows(s, v[0], v[1], v[2], v[3]);
        });
  }
  if (!paused.any()) return loss;
  detail::OpCall call = detail::OpCall::of(detail::OpForm::softmax_cross_entropy, op, logits, loss);
  call.y = &labels;
  detail::OpGradient gradient;
  if (record) {
    gradient.inputs = {logits, labels};
    gradient.saved = {probabilities, classes};
    gradient.rule = [](const std::vector<NDArray>& g, const std::vector<NDArray>& saved) {
      const NDArray& saved_p = saved[0];
      const NDArray& saved_labels = saved[1];
      const char* name = "softmax_cross_entropy_backward";
      Engine& e = saved_p.engine();
      NDArray dlogits =
          detail::allocate_array(e, saved_p.shape(), saved_p.dtype(), saved_p.device(), name);
      detail::push_view_op<4>(e, dlogits.device(), name,
                              {detail::lazy_view(saved_p), detail::lazy_view(saved_labels),
                               detail::lazy_view(g[0]), detail::lazy_view(dlogits)},
                              {saved_p.var(), saved_labels.var(), g[0].var()}, {dlogits.var()},
                              [](const ops::Kernels& k, Stream* s, const auto& v) {
                                k.softmax_cross_entropy_backward(s, v[0], v[1], v[2], v[3]);
                              });
      return std::vector<NDArray>{dlogits, NDArray()};
    };
    call.gradient = &gradient;
  }
  paused.report(call);
  return loss;
}

NDArray accuracy(const NDArray& logits, const NDArray& labels) {
  check_classification("accuracy", logits, labels);
  const detail::RecordingPaused paused;
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
  if (!detail::training() || p == 0.0) return x;
  NDArray mask;
  {
    const detail::RecordingPaused paused;
    const NDArray u = random::uniform(
        x.shape(), {.dtype = x.dtype(), .device = x.device(), .generator = generator});
    mask = (u >= p) * (1.0 / (1.0 - p));
  }
  return x * mask;  // recorded as a product with the (saved) mask
}

// batch_norm in training mode as one op, and its gradient as one op (checked by the caller;
// x not empty, the running statistics contiguous: the kernel writes them in place).
NDArray batch_norm_training(const NDArray& x, const NDArray& gamma, const NDArray& beta,
                            const NDArray& running_mean, const NDArray& running_var,
                            double momentum, double eps) {
  const char* op = "batch_norm";
  Engine& engine = x.engine();
  const Shape channels{x.shape()[1]};
  const bool record = detail::gradient_wanted({&x, &gamma, &beta});
  // The running statistics are written in place, as the unfused steps write them.
  const NDArray mean_out = running_mean.detach(), var_out = running_var.detach();
  detail::note_in_place_write(op, mean_out);
  detail::note_in_place_write(op, var_out);
  const detail::OpModesPaused paused;  // the dense copies are the op's own business
  const NDArray dense_x = dense(x), dense_gamma = dense(gamma), dense_beta = dense(beta);
  NDArray y = detail::allocate_array(engine, x.shape(), x.dtype(), x.device(), op);
  NDArray saved_mean = detail::allocate_array(engine, channels, x.dtype(), x.device(), op);
  NDArray saved_inv_std = detail::allocate_array(engine, channels, x.dtype(), x.device(), op);
  detail::push_view_op<8>(
      engine, y.device(), op,
      {detail::lazy_view(dense_x), detail::lazy_view(dense_gamma), detail::lazy_view(dense_beta),
       detail::lazy_view(mean_out), detail::lazy_view(var_out), detail::lazy_view(y),
       detail::lazy_view(saved_mean), detail::lazy_view(saved_inv_std)},
      {dense_x.var(), dense_gamma.var(), dense_beta.var()},
      {mean_out.var(), var_out.var(), y.var(), saved_mean.var(), saved_inv_std.var()},
      [momentum, eps](const ops::Kernels& k, Stream* s, const auto& v) {
        k.batch_norm_forward(s, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], momentum, eps);
      });
  if (!record) return y;
  detail::OpCall call = detail::OpCall::of(detail::OpForm::untraced, op, x, y);
  detail::OpGradient gradient;
  gradient.inputs = {x, gamma, beta};
  gradient.saved = {dense_x, dense_gamma, saved_mean, saved_inv_std};
  gradient.rule = [](const std::vector<NDArray>& g, const std::vector<NDArray>& saved) {
    const char* name = "batch_norm_backward";
    const NDArray &saved_x = saved[0], &saved_gamma = saved[1];
    Engine& e = saved_x.engine();
    const NDArray dy = dense(g[0]);
    const Device device = saved_x.device();
    NDArray dx = detail::allocate_array(e, saved_x.shape(), saved_x.dtype(), device, name);
    NDArray dgamma = detail::allocate_array(e, saved_gamma.shape(), saved_x.dtype(), device, name);
    NDArray dbeta = detail::allocate_array(e, saved_gamma.shape(), saved_x.dtype(), device, name);
    detail::push_view_op<8>(
        e, device, name,
        {detail::lazy_view(saved_x), detail::lazy_view(dy), detail::lazy_view(saved_gamma),
         detail::lazy_view(saved[2]), detail::lazy_view(saved[3]), detail::lazy_view(dx),
         detail::lazy_view(dgamma), detail::lazy_view(dbeta)},
        {saved_x.var(), dy.var(), saved_gamma.var(), saved[2].var(), saved[3].var()},
        {dx.var(), dgamma.var(), dbeta.var()}, [](const ops::Kernels& k, Stream* s, const auto& v) {
          k.batch_norm_backward(s, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
        });
    return std::vector<NDArray>{dx, dgamma, dbeta};
  };
  call.gradient = &gradient;
  paused.report(call);
  return y;
}

}  // namespace

NDArray dropout(const NDArray& x, double p, std::uint64_t seed) {
  detail::check_defined("dropout", x);
  if (!detail::training() || p == 0.0) return dropout_with(x, p, nullptr);
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
  if (!detail::training()) {
    const NDArray inverse_std = 1.0 / nd::sqrt(running_var.reshape(per_channel) + eps);
    return (x - running_mean.reshape(per_channel)) * (inverse_std * scale) + shift;
  }
  // One fused op forward and one backward (the batch_norm kernel family); the export trace,
  // which must see ops it can name in a graph, gets the unfused steps below.
  if (x.size() == 0) {
    throw Error("tandem: batch_norm: training needs at least one element per channel, got shape " +
                x.shape().to_string());
  }
  if (!detail::modes_see_each_op() && running_mean.is_contiguous() && running_var.is_contiguous()) {
    return batch_norm_training(x, gamma, beta, running_mean, running_var, momentum, eps);
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
    const detail::RecordingPaused paused;
    NDArray rm = running_mean.detach(), rv = running_var.detach();
    rm *= momentum;
    rm += mean.detach().reshape({channels}) * (1.0 - momentum);
    rv *= momentum;
    rv += variance.detach().reshape({channels}) * (1.0 - momentum);
  }
  return y;
}

}  // namespace tandem::nd
