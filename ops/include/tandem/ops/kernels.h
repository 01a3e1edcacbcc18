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

namespace tandem {
class Stream;
}

namespace tandem::ops {

struct Kernels {
  // Element-wise (unary_ops.h, binary_ops.h): out = op(in), op(a, b), op(a, scalar) or
  // op(scalar, a) (scalar_first), on views of one shape (broadcast inputs have stride 0); the
  // _dense forms take n contiguous elements of one dtype.
  void (*unary)(Stream* stream, UnaryOp op, const ArrayView& in, const ArrayView& out) = nullptr;
  void (*binary)(Stream* stream, BinaryOp op, const ArrayView& a, const ArrayView& b,
                 const ArrayView& out) = nullptr;
  void (*binary_scalar)(Stream* stream, BinaryOp op, const ArrayView& a, double scalar,
                        bool scalar_first, const ArrayView& out) = nullptr;
  void (*unary_dense)(Stream* stream, UnaryOp op, DType dtype, const void* in, void* out,
                      std::int64_t n) = nullptr;
  void (*binary_dense)(Stream* stream, BinaryOp op, DType dtype, const void* a, const void* b,
                       void* out, std::int64_t n) = nullptr;
  void (*binary_scalar_dense)(Stream* stream, BinaryOp op, DType dtype, const void* a,
                              double scalar, bool scalar_first, void* out,
                              std::int64_t n) = nullptr;
  // Copy (converting dtypes), fill with a value, arange (out[i] = start + i * step).
  void (*copy)(Stream* stream, const ArrayView& in, const ArrayView& out) = nullptr;
  void (*fill)(Stream* stream, const ArrayView& out, double value) = nullptr;
  void (*arange)(Stream* stream, const ArrayView& out, double start, double step) = nullptr;
  // Reductions (reduce_ops.h) of the whole array into one element, or along one axis.
  void (*reduce_all)(Stream* stream, ReduceOp op, const ArrayView& in,
                     const ArrayView& out) = nullptr;
  void (*reduce_axis)(Stream* stream, ReduceOp op, const ArrayView& in, int axis,
                      const ArrayView& out) = nullptr;
  // c = a . b for 2-d views, or c += a . b when `accumulate` (BLAS's beta = 1: the product is
  // added into c as it is formed, with no temporary of c's size).
  void (*gemm)(Stream* stream, const ArrayView& a, const ArrayView& b, const ArrayView& c,
               bool accumulate) = nullptr;
  // Philox draws into a contiguous floating view from (seed, counter); they return the counter
  // blocks the draw consumes.
  std::uint64_t (*random_uniform)(Stream* stream, const ArrayView& out, double low, double high,
                                  std::uint64_t seed, std::uint64_t counter) = nullptr;
  std::uint64_t (*random_normal)(Stream* stream, const ArrayView& out, double mean, double stddev,
                                 std::uint64_t seed, std::uint64_t counter) = nullptr;
  // Convolution and pooling over dense NCHW views (conv_geometry.h): y = conv(x, weight) + bias
  // (bias.data == nullptr: none), its gradients with respect to the input and the weight, and
  // max / average pooling with theirs (max pooling's gradient reads the forward input).
  void (*conv2d)(Stream* stream, const ArrayView& x, const ArrayView& weight, const ArrayView& bias,
                 const ArrayView& y, const Conv2dGeometry& g) = nullptr;
  void (*conv2d_backward_data)(Stream* stream, const ArrayView& dy, const ArrayView& weight,
                               const ArrayView& dx, const Conv2dGeometry& g) = nullptr;
  void (*conv2d_backward_weight)(Stream* stream, const ArrayView& x, const ArrayView& dy,
                                 const ArrayView& dweight, const Conv2dGeometry& g) = nullptr;
  void (*max_pool2d)(Stream* stream, const ArrayView& x, const ArrayView& y,
                     const Pool2dGeometry& g) = nullptr;
  void (*avg_pool2d)(Stream* stream, const ArrayView& x, const ArrayView& y,
                     const Pool2dGeometry& g) = nullptr;
  void (*max_pool2d_backward)(Stream* stream, const ArrayView& x, const ArrayView& dy,
                              const ArrayView& dx, const Pool2dGeometry& g) = nullptr;
  void (*avg_pool2d_backward)(Stream* stream, const ArrayView& dy, const ArrayView& dx,
                              const Pool2dGeometry& g) = nullptr;
  // Softmax over the last axis of dense rows x classes views (softmax.h), stable with the row
  // maximum: out = softmax(in) or log_softmax(in) (log); its gradient dx from the output y and
  // dy (dx = y * (dy - sum(dy * y)), or dy - exp(y) * sum(dy) for log).
  void (*softmax_rows)(Stream* stream, const ArrayView& in, const ArrayView& out,
                       bool log) = nullptr;
  void (*softmax_rows_backward)(Stream* stream, const ArrayView& y, const ArrayView& dy,
                                const ArrayView& dx, bool log) = nullptr;
  // Cross entropy of softmax(logits) (dense rows x classes) against int32 labels (rows): loss
  // per row, and the probabilities when probabilities.data != nullptr. A label outside
  // [0, classes) has loss 0. head_grad is 1-d with any stride (0: broadcast). The backward:
  // dlogits[r] = head_grad[r] * (p[r] - one_hot(label)).
  void (*softmax_cross_entropy_rows)(Stream* stream, const ArrayView& logits,
                                     const ArrayView& labels, const ArrayView& loss,
                                     const ArrayView& probabilities) = nullptr;
  void (*softmax_cross_entropy_backward)(Stream* stream, const ArrayView& probabilities,
                                         const ArrayView& labels, const ArrayView& head_grad,
                                         const ArrayView& dlogits) = nullptr;
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
