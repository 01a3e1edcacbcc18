// The kernel table of a backend: one function pointer per kernel family, so that code above
// ops/ runs an op on any device without naming the backend.
//
//   engine.push([=](tandem::RunContext& ctx) {
//     const tandem::ops::Kernels& kernels = tandem::ops::kernels_for(ctx.device().kind);
//     kernels.unary(ctx.stream(), tandem::ops::UnaryOp::exp, in.resolve(), out.resolve());
//   }, device, {in_var}, {out_var});
//
// Every kernel takes the stream of the op that calls it first: nullptr for a CPU op (the kernel
// runs inline, on the calling worker), the op's stream for an accelerator op (the kernel only
// *enqueues* its work there; the views must stay valid, so they are captured by value).
//
// Built in: cpu (the CPU kernels, inline), sim (the CPU kernels run as host work on the sim
// stream, with the sim model's cost from the op lists), and cuda in builds with CUDA. A backend
// registered at run time registers its table with register_kernels; one whose memory the host
// can read and write reuses the CPU kernels through host_stream_kernels().
#pragma once

#include <cstdint>

#include "tandem/device.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/conv_geometry.h"
#include "tandem/ops/op_kinds.h"
#include "tandem/ops/update_group.h"

namespace tandem {
class Stream;
}

namespace tandem::ops {

// The scalars of one Adam update (the adam_update family).
struct AdamStep {
  double rescale = 1.0;    // the gradient's scale (1 / batch size)
  double wd = 0.0;         // weight decay, added to the scaled gradient
  double beta1 = 0.9;      // decay of the mean
  double beta2 = 0.999;    // decay of the variance
  double epsilon = 1e-8;   // added to sqrt(var)
  double step_size = 0.0;  // the learning rate with the bias corrections of this step
};

// The kernel families, one row each: X(Result, name, (parameters), (arguments), label,
// sim_cost, launch_result, sim_launches). Everything a family needs besides its kernels is
// generated from its row: the `Kernels` member, `missing_kernel`'s entry, the cpu table
// (cpu::name(arguments)), the host-stream table (cpu::name as a host item of the op's stream,
// costing `sim_cost`, returning `launch_result`) and the cuda table (cuda::name(arguments,
// stream)). `label` names the kernel in errors; `sim_cost`, `launch_result` and `sim_launches` (the
// kernel launches and library calls the CUDA kernel makes, which sim counts for the profiler) are
// expanded in ops/src/host_stream_kernels.cc only (its helpers: pass_cost, elementwise_cost,
// conv_cost, pool_cost, gemm_work, random_blocks, one_launch, division_launches, gemm_launches,
// reduce_launches, reduce_axis_launches, conv_launches, batch_norm_launches, group_cost,
// group_has_momentum, group_launches).
// A new family is a row here, its CPU and CUDA kernels, and the front-end op that pushes it.
//
// Every kernel takes the op's stream first (not listed in `parameters`).
// clang-format off
#define TANDEM_KERNEL_FAMILIES(X)                                                                  \
  /* Element-wise (unary_ops.h, binary_ops.h): out = op(in), op(a, b), op(a, scalar) or */         \
  /* op(scalar, a) (scalar_first), on views of one shape (broadcast inputs have stride 0); */      \
  /* the _dense forms take n contiguous elements of one dtype. */                                  \
  X(void, unary, (UnaryOp op, const ArrayView& in, const ArrayView& out), (op, in, out),           \
    op_name(op), pass_cost(out, 2, flops_per_element(op)), void(), one_launch(out))                \
  X(void, binary, (BinaryOp op, const ArrayView& a, const ArrayView& b, const ArrayView& out),     \
    (op, a, b, out), op_name(op), pass_cost(out, 3, flops_per_element(op)), void(),                \
    division_launches(op, out.dtype, true, out.num_elements()))                                    \
  X(void, binary_scalar,                                                                           \
    (BinaryOp op, const ArrayView& a, double scalar, bool scalar_first, const ArrayView& out),     \
    (op, a, scalar, scalar_first, out), op_name(op), pass_cost(out, 2, flops_per_element(op)),     \
    void(), division_launches(op, out.dtype, scalar_first, out.num_elements()))                    \
  X(void, unary_dense, (UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n),       \
    (op, dtype, in, out, n), op_name(op),                                                          \
    elementwise_cost(n, dtype, 2, flops_per_element(op)), void(), dense_launches(n))               \
  X(void, binary_dense,                                                                            \
    (BinaryOp op, DType dtype, const void* a, const void* b, void* out, std::int64_t n),           \
    (op, dtype, a, b, out, n), op_name(op),                                                        \
    elementwise_cost(n, dtype, 3, flops_per_element(op)), void(),                                  \
    division_launches(op, dtype, true, n))                                                         \
  X(void, binary_scalar_dense,                                                                     \
    (BinaryOp op, DType dtype, const void* a, double scalar, bool scalar_first, void* out,         \
     std::int64_t n),                                                                              \
    (op, dtype, a, scalar, scalar_first, out, n), op_name(op),                                     \
    elementwise_cost(n, dtype, 2, flops_per_element(op)), void(),                                  \
    division_launches(op, dtype, scalar_first, n))                                                 \
  /* Copy (converting dtypes), fill with a value, arange (out[i] = start + i * step). */           \
  X(void, copy, (const ArrayView& in, const ArrayView& out), (in, out), "copy",                    \
    pass_cost(out, 2, 0.0), void(), one_launch(out))                                               \
  X(void, fill, (const ArrayView& out, double value), (out, value), "fill",                        \
    pass_cost(out, 1, 0.0), void(), one_launch(out))                                               \
  X(void, arange, (const ArrayView& out, double start, double step), (out, start, step),           \
    "arange", pass_cost(out, 1, 1.0), void(), one_launch(out))                                     \
  /* Select: out = condition != 0 ? a : b, element by element; every view has out's shape */       \
  /* (stride 0 where broadcast); a, b and out share one dtype, condition has any dtype. */          \
  X(void, where,                                                                                   \
    (const ArrayView& condition, const ArrayView& a, const ArrayView& b, const ArrayView& out),    \
    (condition, a, b, out), "where", pass_cost(out, 4, 1.0), void(), one_launch(out))              \
  /* Gather along the middle axis of (outer, n, inner) views: out[o, j, i] = */                    \
  /* x[o, indices[j], i], indices a 1-d int32 or int64 view, each in [-n, n) (negative: from */     \
  /* the end); one out of range is a tandem::Error naming it, `axis` (the caller's) and n. */       \
  /* take_backward: dx = 0, then dx[o, indices[j], i] += dy[o, j, i] (a floating scatter-add). */   \
  X(void, take, (const ArrayView& x, const ArrayView& indices, const ArrayView& out, int axis),    \
    (x, indices, out, axis), "take", pass_cost(out, 2, 0.0), void(),                               \
    (LaunchCounts{out.num_elements() == 0 ? 0u : 3u, 0u, 0u}))                                     \
  X(void, take_backward,                                                                           \
    (const ArrayView& dy, const ArrayView& indices, const ArrayView& dx, int axis),                \
    (dy, indices, dx, axis), "take_backward", pass_cost(dy, 3, 1.0), void(),                       \
    (LaunchCounts{dx.num_elements() == 0 ? 0u : dy.num_elements() == 0 ? 1u : 2u, 0u, 0u}))       \
  /* Reductions (reduce_ops.h) of the whole array into one element, or along one axis. */          \
  X(void, reduce_all, (ReduceOp op, const ArrayView& in, const ArrayView& out), (op, in, out),     \
    op_name(op), pass_cost(in, 1, 1.0), void(), reduce_launches(1))                                \
  X(void, reduce_axis, (ReduceOp op, const ArrayView& in, int axis, const ArrayView& out),         \
    (op, in, axis, out), op_name(op), pass_cost(in, 1, 1.0), void(),                               \
    reduce_axis_launches(in, axis, out))                                                           \
  /* c = a . b for 2-d views, or c += a . b when `accumulate` (BLAS's beta = 1: the product */     \
  /* is added into c as it is formed, with no temporary of c's size). */                           \
  X(void, gemm, (const ArrayView& a, const ArrayView& b, const ArrayView& c, bool accumulate),     \
    (a, b, c, accumulate), "dot", gemm_work(a, b, c, accumulate), void(),                          \
    gemm_launches(a, b, c, accumulate))                                                            \
  /* Philox draws into a contiguous floating view from (seed, counter); they return the */         \
  /* counter blocks the draw consumes. */                                                          \
  X(std::uint64_t, random_uniform,                                                                 \
    (const ArrayView& out, double low, double high, std::uint64_t seed, std::uint64_t counter),    \
    (out, low, high, seed, counter), "random.uniform", pass_cost(out, 1, kRandomFlops),            \
    random_blocks(out), one_launch(out))                                                           \
  X(std::uint64_t, random_normal,                                                                  \
    (const ArrayView& out, double mean, double stddev, std::uint64_t seed,                         \
     std::uint64_t counter),                                                                       \
    (out, mean, stddev, seed, counter), "random.normal", pass_cost(out, 1, kRandomFlops),          \
    random_blocks(out), one_launch(out))                                                           \
  /* Convolution and pooling over dense NCHW views (conv_geometry.h): y = conv(x, weight) + */     \
  /* bias (bias.data == nullptr: none), its gradients with respect to the input and the */         \
  /* weight, and max / average pooling with theirs (max pooling's gradient reads the forward */    \
  /* input). */                                                                                    \
  X(void, conv2d,                                                                                  \
    (const ArrayView& x, const ArrayView& weight, const ArrayView& bias, const ArrayView& y,       \
     const Conv2dGeometry& g),                                                                     \
    (x, weight, bias, y, g), "conv2d", conv_cost(g, y.dtype), void(),                              \
    conv_launches(g, ConvPass::forward, dtype_size(y.dtype),                                       \
                  bias.data != nullptr, y.num_elements()))                                         \
  X(void, conv2d_backward_data,                                                                    \
    (const ArrayView& dy, const ArrayView& weight, const ArrayView& dx, const Conv2dGeometry& g),  \
    (dy, weight, dx, g), "conv2d_backward_data", conv_cost(g, dx.dtype), void(),                   \
    conv_launches(g, ConvPass::backward_data, dtype_size(dx.dtype), false, dx.num_elements()))     \
  X(void, conv2d_backward_weight,                                                                  \
    (const ArrayView& x, const ArrayView& dy, const ArrayView& dweight, const Conv2dGeometry& g),  \
    (x, dy, dweight, g), "conv2d_backward_weight", conv_cost(g, dweight.dtype), void(),            \
    conv_launches(g, ConvPass::backward_weight, dtype_size(dweight.dtype),                         \
                  false, dweight.num_elements()))                                                  \
  /* The bias gradient: dbias[c] = sum of dy[n, c, :, :] (dense dy, common/conv_bias.h). */       \
  X(void, conv2d_backward_bias, (const ArrayView& dy, const ArrayView& dbias), (dy, dbias),        \
    "conv2d_backward_bias", pass_cost(dy, 1, 1.0), void(), one_launch(dbias))                      \
  X(void, max_pool2d, (const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g),           \
    (x, y, g), "max_pool2d", pool_cost(g, y.dtype), void(), one_launch(y))                         \
  X(void, avg_pool2d, (const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g),           \
    (x, y, g), "avg_pool2d", pool_cost(g, y.dtype), void(), one_launch(y))                         \
  X(void, max_pool2d_backward,                                                                     \
    (const ArrayView& x, const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g),       \
    (x, dy, dx, g), "max_pool2d_backward", pool_cost(g, dx.dtype), void(), one_launch(dx))         \
  X(void, avg_pool2d_backward,                                                                     \
    (const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g), (dy, dx, g),              \
    "avg_pool2d_backward", pool_cost(g, dx.dtype), void(), one_launch(dx))                         \
  /* Softmax over the last axis of dense rows x classes views (softmax.h), stable with the */      \
  /* row maximum: out = softmax(in) or log_softmax(in) (log); its gradient dx from the */          \
  /* output y and dy (dx = y * (dy - sum(dy * y)), or dy - exp(y) * sum(dy) for log). */           \
  X(void, softmax_rows, (const ArrayView& in, const ArrayView& out, bool log), (in, out, log),     \
    log ? "log_softmax" : "softmax", pass_cost(out, 2, kSoftmaxFlops), void(), one_launch(out))    \
  X(void, softmax_rows_backward,                                                                   \
    (const ArrayView& y, const ArrayView& dy, const ArrayView& dx, bool log), (y, dy, dx, log),    \
    log ? "log_softmax_backward" : "softmax_backward", pass_cost(dx, 3, kSoftmaxFlops), void(),    \
    one_launch(dx))                                                                                \
  /* Cross entropy of softmax(logits) (dense rows x classes) against int32 labels (rows): */       \
  /* loss per row, and the probabilities when probabilities.data != nullptr. A label outside */    \
  /* [0, classes) has loss 0 and gradient 0. head_grad is 1-d with any stride (0: broadcast). */  \
  /* The backward: dlogits[r] = head_grad[r] * (p[r] - one_hot(label)). */                         \
  X(void, softmax_cross_entropy_rows,                                                              \
    (const ArrayView& logits, const ArrayView& labels, const ArrayView& loss,                      \
     const ArrayView& probabilities),                                                              \
    (logits, labels, loss, probabilities), "softmax_cross_entropy",                                \
    pass_cost(logits, probabilities.data != nullptr ? 2 : 1, kSoftmaxFlops), void(),               \
    one_launch(loss))                                                                              \
  X(void, softmax_cross_entropy_backward,                                                          \
    (const ArrayView& probabilities, const ArrayView& labels, const ArrayView& head_grad,          \
     const ArrayView& dlogits),                                                                    \
    (probabilities, labels, head_grad, dlogits), "softmax_cross_entropy_backward",                 \
    pass_cost(dlogits, 2, 2.0), void(), one_launch(dlogits))                                      \
  /* Batch normalization in training mode over dense N x C x ... views (cpu/batch_norm.cc): the */ \
  /* statistics of each channel over the batch and the spatial axes, y = (x - mean) * */          \
  /* inv_std * gamma + beta, the batch's mean and 1 / sqrt(var + eps) saved (C each), and the */   \
  /* running statistics updated in place (r = momentum * r + (1 - momentum) * batch). Its */       \
  /* gradient: dx, dgamma and dbeta in one pass from x, dy and the saved statistics (an */         \
  /* output with data == nullptr is not formed). */                                                \
  X(void, batch_norm_forward,                                                                      \
    (const ArrayView& x, const ArrayView& gamma, const ArrayView& beta,                            \
     const ArrayView& running_mean, const ArrayView& running_var, const ArrayView& y,              \
     const ArrayView& saved_mean, const ArrayView& saved_inv_std, double momentum, double eps),    \
    (x, gamma, beta, running_mean, running_var, y, saved_mean, saved_inv_std, momentum, eps),      \
    "batch_norm", pass_cost(y, 3, kBatchNormFlops), void(), batch_norm_launches(y))                \
  X(void, batch_norm_backward,                                                                     \
    (const ArrayView& x, const ArrayView& dy, const ArrayView& gamma,                              \
     const ArrayView& saved_mean, const ArrayView& saved_inv_std, const ArrayView& dx,             \
     const ArrayView& dgamma, const ArrayView& dbeta),                                             \
    (x, dy, gamma, saved_mean, saved_inv_std, dx, dgamma, dbeta), "batch_norm_backward",           \
    pass_cost(x, 5, kBatchNormFlops), void(), batch_norm_launches(x))                             \
  /* Optimizer updates in place on dense views of one shape and dtype (cpu/optimizer_update.cc): */\
  /* each element computed with the same operations, in the same order and dtype, as the */       \
  /* unfused element-wise ops of nn::SGD and nn::Adam. SGD (momentum_buffer.data == nullptr: */    \
  /* none): w *= 1 - decay (decay != 0), w -= g * grad_scale; with momentum: m *= momentum, */     \
  /* m -= g * grad_scale, m -= w * decay (decay != 0), w += m. Adam: g' = g * rescale */           \
  /* (rescale != 1) + w * wd (wd != 0), mean = mean * beta1 + g' * (1 - beta1), var = var * */    \
  /* beta2 + g'^2 * (1 - beta2), w -= mean / (sqrt(var) + epsilon) * step_size. */                 \
  X(void, sgd_update,                                                                              \
    (const ArrayView& weight, const ArrayView& grad, const ArrayView& momentum_buffer,             \
     double grad_scale, double decay, double momentum),                                            \
    (weight, grad, momentum_buffer, grad_scale, decay, momentum), "sgd_update",                    \
    pass_cost(weight, momentum_buffer.data != nullptr ? 5 : 3, 4.0), void(), one_launch(weight))   \
  X(void, adam_update,                                                                             \
    (const ArrayView& weight, const ArrayView& grad, const ArrayView& mean, const ArrayView& var,   \
     const AdamStep& step),                                                                        \
    (weight, grad, mean, var, step), "adam_update", pass_cost(weight, 7, 14.0), void(),            \
    one_launch(weight))                                                                            \
  /* The same updates of several parameters at once (update_group.h): every tensor of the */       \
  /* group updated as sgd_update / adam_update would update it alone, with the same bits; */       \
  /* the CUDA kernel makes one launch per table of common/update_group_plan.h. */                  \
  X(void, sgd_update_group,                                                                        \
    (const UpdateGroup& group, double grad_scale, double decay, double momentum),                  \
    (group, grad_scale, decay, momentum), "multi_sgd_update",                                      \
    group_cost(group, group_has_momentum(group) ? 5 : 3, 4.0), void(), group_launches(group))      \
  X(void, adam_update_group, (const UpdateGroup& group, const AdamStep& step), (group, step),       \
    "multi_adam_update", group_cost(group, 7, 14.0), void(), group_launches(group))
// clang-format on

// A row's parenthesized parameter or argument list, without its parentheses.
#define TANDEM_KERNEL_UNPAREN(...) __VA_ARGS__

// One function pointer per family; a table registered with register_kernels sets every one.
struct Kernels {
#define TANDEM_KERNEL_MEMBER(Result, name, parameters, ...) \
  Result (*name)(Stream * stream, TANDEM_KERNEL_UNPAREN parameters) = nullptr;
  TANDEM_KERNEL_FAMILIES(TANDEM_KERNEL_MEMBER)
#undef TANDEM_KERNEL_MEMBER
};

// The name of the first family `table` lacks ("unary", "gemm", ...), nullptr when it has all.
const char* missing_kernel(const Kernels& table);

// The table of `kind`'s backend. Throws tandem::Error naming the kind when none is registered.
const Kernels& kernels_for(DeviceKind kind);

// Whether `kind` has a table.
bool has_kernels(DeviceKind kind);

// Registers (or replaces) the table of `kind`; thread-safe. Throws tandem::Error naming the
// missing family when `table` lacks one. Ops already running keep the table they read.
void register_kernels(DeviceKind kind, const Kernels& table);

// The CPU kernels, run inline in the calling thread on host memory (the stream is ignored): the
// cpu backend's table, and what code reading host memory outside any op uses.
const Kernels& host_kernels();

// The CPU kernels run as host work on the op's stream (Stream::enqueue_host), in stream order,
// with the sim model's cost of each op: for an accelerator whose memory the host can access
// (sim, and the test backends).
const Kernels& host_stream_kernels();

}  // namespace tandem::ops
