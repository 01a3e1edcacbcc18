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
#include "core/invoke.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "core/view_op.h"
#include "ops/gradient_into.h"
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

struct SoftmaxAttrs {
  int axis;  // normalized
  bool log;  // log_softmax
};

// The softmax rule: from the saved output y (the fused backward kernel over the last axis).
detail::OpGradient softmax_gradient(const detail::OpCall& c) {
  const NDArray& x = *c.inputs[0];
  const int axis = detail::attrs_of<SoftmaxAttrs>(c).axis;
  const bool last = axis == x.ndim() - 1;
  const bool log = detail::attrs_of<SoftmaxAttrs>(c).log;
  detail::OpGradient gradient;
  gradient.inputs = {x};
  gradient.saved = {*c.out};
  gradient.rule = [axis, last, log](const std::vector<NDArray>& g,
                                    const std::vector<NDArray>& saved) {
    const NDArray& saved_y = saved[0];
    if (last) return std::vector<NDArray>{softmax_last_axis_backward(saved_y, g[0], log)};
    // log: dx = g - softmax(x) * sum(g); else dx = y * (g - sum(g * y))
    return std::vector<NDArray>{log ? g[0] - nd::exp(saved_y) * nd::sum(g[0], axis, true)
                                    : saved_y * (g[0] - nd::sum(g[0] * saved_y, axis, true))};
  };
  return gradient;
}

void write_softmax_attrs(const detail::OpCall& c, detail::OpAttrWriter& out) {
  out.integer("axis", detail::attrs_of<SoftmaxAttrs>(c).axis);
}

NDArray softmax_op(const NDArray& x, int axis, bool log);

// The fused path (the last axis) and the composed one (another axis).
std::vector<detail::OpExample> softmax_examples(bool log) {
  return {detail::example_of_one("last axis", Shape{3, 5},
                                 [log](const NDArray& x) { return softmax_op(x, -1, log); }),
          detail::example_of_one("axis 0", Shape{3, 5},
                                 [log](const NDArray& x) { return softmax_op(x, 0, log); })};
}

const detail::OpDefinition kSoftmax{
    .name = "softmax",
    .write_attrs = write_softmax_attrs,
    .import =
        [](const detail::OpAttrReader& attrs, const std::vector<NDArray>& in) {
          return softmax_op(in[0], attrs.int32("axis"), false);
        },
    .gradient = softmax_gradient,
    .examples = [] { return softmax_examples(false); }};
const detail::OpDefinition kLogSoftmax{
    .name = "log_softmax",
    .write_attrs = write_softmax_attrs,
    .import =
        [](const detail::OpAttrReader& attrs, const std::vector<NDArray>& in) {
          return softmax_op(in[0], attrs.int32("axis"), true);
        },
    .gradient = softmax_gradient,
    .examples = [] { return softmax_examples(true); }};

// softmax or log_softmax along `axis`: one fused op over the last axis, else composed of
// element-wise ops and reductions (one node either way).
NDArray softmax_op(const NDArray& x, int axis, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  SoftmaxAttrs attrs{.axis = axis, .log = log};
  bool last = false;
  return detail::invoke(
      log ? kLogSoftmax : kSoftmax, {&x}, &attrs,
      [&] {
        check_floating_input(op, x);
        attrs.axis = checked_axis(op, x, axis);
        last = attrs.axis == x.ndim() - 1;
        detail::OpPlan plan;
        plan.allocate = false;  // the steps make the result
        return plan;
      },
      [&](detail::OpOutput& o) {
        if (last) {
          o.out = softmax_last_axis(x, log);
        } else if (log) {
          o.out = log_softmax_values(x, attrs.axis);
        } else {
          const NDArray e = nd::exp(x - nd::max(x, attrs.axis, true));
          o.out = e / nd::sum(e, attrs.axis, true);
        }
      });
}

// The softmax_cross_entropy rule, from the probabilities and int32 labels the forward kept:
// dlogits = head_grad * (p - one_hot(label)), one fused kernel.
detail::OpGradient softmax_cross_entropy_gradient(const detail::OpCall& c) {
  detail::OpGradient gradient;
  gradient.inputs = {*c.inputs[0], *c.inputs[1]};
  gradient.saved = {c.kept[0], c.kept[1]};
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
  return gradient;
}

const detail::OpDefinition kSoftmaxCrossEntropy{
    .name = "softmax_cross_entropy",
    .num_inputs = 2,
    .import = [](const detail::OpAttrReader&,
                 const std::vector<NDArray>& in) { return softmax_cross_entropy(in[0], in[1]); },
    .gradient = softmax_cross_entropy_gradient,
    .examples =
        [] {
          return std::vector<detail::OpExample>{detail::OpExample{
              .label = "4 samples, 5 classes, labels int64",
              .inputs =
                  [](Device d) {
                    return std::vector<NDArray>{detail::example_array({4, 5}, d, 41, -2.0, 2.0),
                                                detail::example_array({4}, d, 42, 0.0, 5.0, int64)};
                  },
              .run =
                  [](const std::vector<NDArray>& in) {
                    return softmax_cross_entropy(in[0], in[1]);
                  },
              .differentiable = {0}}};
        }};

}  // namespace

namespace detail {
TANDEM_OP_DEFINITIONS(network, &kSoftmax, &kLogSoftmax, &kSoftmaxCrossEntropy)
}  // namespace detail

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
  return detail::invoke(
      kSoftmaxCrossEntropy, {&logits, &labels}, nullptr,
      [&] {
        check_classification(op, logits, labels);
        return detail::OpPlan{&logits.engine(), Shape{logits.shape()[0]}, logits.dtype(),
                              logits.device()};
      },
      [&](detail::OpOutput& o) {
        Engine& engine = logits.engine();
        const NDArray x = dense(logits);
        // The kernels take int32 labels. An int64 label outside int32's range is outside
        // [0, classes) too and must stay so, not wrap onto a class: clamp before narrowing.
        const NDArray classes =
            labels.dtype() == int32
                ? dense(labels)
                : nd::minimum(nd::maximum(labels, -1.0), 2147483647.0).astype(int32);
        NDArray probabilities;  // softmax(logits), what the rule needs
        if (o.gradient) {
          probabilities =
              detail::allocate_array(engine, logits.shape(), logits.dtype(), logits.device(), op);
          o.kept[0] = probabilities;
          o.kept[1] = classes;
        }
        const detail::LazyView vp =
            o.gradient ? detail::lazy_view(probabilities) : detail::LazyView{};
        const Var writes[2] = {o.out.var(), o.gradient ? probabilities.var() : o.out.var()};
        detail::push_view_op<4>(
            engine, o.out.device(), op,
            {detail::lazy_view(x), detail::lazy_view(classes), detail::lazy_view(o.out), vp},
            {x.var(), classes.var()}, std::span<const Var>(writes, o.gradient ? 2 : 1),
            [](const ops::Kernels& k, Stream* s, const auto& v) {
              k.softmax_cross_entropy_rows(s, v[0], v[1], v[2], v[3]);
            });
      });
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

// The gradient of training-mode batch_norm: dx, dgamma and dbeta in one op from x, gamma and
// the batch statistics the forward kept. dgamma and dbeta go straight into gamma's and beta's
// gradient buffers when backward offers them (gradient_into.h).
detail::OpGradient batch_norm_gradient(const detail::OpCall& c) {
  detail::OpGradient gradient;
  gradient.inputs = {*c.inputs[0], *c.inputs[1], *c.inputs[2]};
  gradient.saved = {*c.inputs[0], *c.inputs[1], c.kept[0], c.kept[1]};
  gradient.rule_into = [](const std::vector<NDArray>& g, const std::vector<NDArray>& saved,
                          std::vector<detail::GradientDestination>& into) {
    const char* name = "batch_norm_backward";
    const NDArray x = dense(saved[0]), gamma = dense(saved[1]), dy = dense(g[0]);
    Engine& e = x.engine();
    const Device device = x.device();
    NDArray dx = detail::allocate_array(e, x.shape(), x.dtype(), device, name);
    const detail::GradientOutput dgamma =
        detail::gradient_output(into, 1, e, gamma.shape(), x.dtype(), device, name);
    const detail::GradientOutput dbeta =
        detail::gradient_output(into, 2, e, gamma.shape(), x.dtype(), device, name);
    std::vector<Var> writes = detail::gradient_writes({&dgamma, &dbeta});
    writes.push_back(dx.var());
    const std::vector<detail::GradientAdd> adds = detail::gradient_adds({&dgamma, &dbeta});
    detail::push_view_op<8>(
        e, device, name,
        {detail::lazy_view(x), detail::lazy_view(dy), detail::lazy_view(gamma),
         detail::lazy_view(saved[2]), detail::lazy_view(saved[3]), detail::lazy_view(dx),
         detail::lazy_view(dgamma.array), detail::lazy_view(dbeta.array)},
        {x.var(), dy.var(), gamma.var(), saved[2].var(), saved[3].var()}, writes,
        [adds](const ops::Kernels& k, Stream* s, const auto& v) {
          k.batch_norm_backward(s, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
          detail::add_formed_gradients(k, s, adds);
        });
    dgamma.queued();
    dbeta.queued();
    return std::vector<NDArray>{dx, dgamma.result(), dbeta.result()};
  };
  gradient.rule = [into = gradient.rule_into](const std::vector<NDArray>& g,
                                              const std::vector<NDArray>& saved) {
    std::vector<detail::GradientDestination> none;
    return into(g, saved, none);
  };
  return gradient;
}

// Training-mode batch_norm as one op. Its record serves autograd only: under the export trace
// nd::batch_norm runs its unfused steps (a graph of known nodes), so no graph names this one,
// and it is not among the file's TANDEM_OP_DEFINITIONS.
const detail::OpDefinition kBatchNormTraining{
    .name = "batch_norm", .num_inputs = 3, .gradient = batch_norm_gradient};

// Checked by the caller: x not empty, the running statistics contiguous (the kernel writes them
// in place), every array on x's device with x's dtype.
NDArray batch_norm_training(const NDArray& x, const NDArray& gamma, const NDArray& beta,
                            const NDArray& running_mean, const NDArray& running_var,
                            double momentum, double eps) {
  return detail::invoke(
      kBatchNormTraining, {&x, &gamma, &beta}, nullptr,
      [&] {
        // The running statistics are written in place, as the unfused steps write them.
        detail::note_in_place_write("batch_norm", running_mean.detach());
        detail::note_in_place_write("batch_norm", running_var.detach());
        return detail::OpPlan{&x.engine(), x.shape(), x.dtype(), x.device()};
      },
      [&](detail::OpOutput& o) {
        const char* op = "batch_norm";
        Engine& engine = x.engine();
        const Shape channels{x.shape()[1]};
        const NDArray dense_x = dense(x), dense_gamma = dense(gamma), dense_beta = dense(beta);
        const NDArray mean_out = running_mean.detach(), var_out = running_var.detach();
        NDArray saved_mean = detail::allocate_array(engine, channels, x.dtype(), x.device(), op);
        NDArray saved_inv_std = detail::allocate_array(engine, channels, x.dtype(), x.device(), op);
        detail::push_view_op<8>(
            engine, o.out.device(), op,
            {detail::lazy_view(dense_x), detail::lazy_view(dense_gamma),
             detail::lazy_view(dense_beta), detail::lazy_view(mean_out), detail::lazy_view(var_out),
             detail::lazy_view(o.out), detail::lazy_view(saved_mean),
             detail::lazy_view(saved_inv_std)},
            {dense_x.var(), dense_gamma.var(), dense_beta.var()},
            {mean_out.var(), var_out.var(), o.out.var(), saved_mean.var(), saved_inv_std.var()},
            [momentum, eps](const ops::Kernels& k, Stream* s, const auto& v) {
              k.batch_norm_forward(s, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], momentum,
                                   eps);
            });
        if (o.gradient) {
          o.kept[0] = saved_mean;
          o.kept[1] = saved_inv_std;
        }
      });
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
