// The cuda backend's kernel table: the gpu(i) kernels of this folder, enqueued on the op's CUDA
// stream (they throw tandem::Error when called without one).
#include <string>

#include "kernel_tables.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"
#include "tandem/ops/cuda/convolution.h"
#include "tandem/ops/cuda/copy.h"
#include "tandem/ops/cuda/elementwise.h"
#include "tandem/ops/cuda/gemm.h"
#include "tandem/ops/cuda/pooling.h"
#include "tandem/ops/cuda/random.h"
#include "tandem/ops/cuda/reduce.h"
#include "tandem/ops/cuda/softmax.h"

namespace tandem::ops {

namespace {

Stream& on(Stream* stream, const char* kernel) {
  if (stream == nullptr) [[unlikely]] {
    throw Error(std::string("tandem: ") + kernel +
                ": a gpu kernel needs the op's CUDA stream (RunContext::stream()), got none");
  }
  return *stream;
}

}  // namespace

const Kernels& cuda_kernels() {
  static const Kernels table{
      .unary = [](Stream* s, UnaryOp op, const ArrayView& in,
                  const ArrayView& out) { cuda::unary(op, in, out, on(s, op_name(op))); },
      .binary = [](Stream* s, BinaryOp op, const ArrayView& a, const ArrayView& b,
                   const ArrayView& out) { cuda::binary(op, a, b, out, on(s, op_name(op))); },
      .binary_scalar =
          [](Stream* s, BinaryOp op, const ArrayView& a, double scalar, bool scalar_first,
             const ArrayView& out) {
            cuda::binary_scalar(op, a, scalar, scalar_first, out, on(s, op_name(op)));
          },
      .unary_dense =
          [](Stream* s, UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n) {
            cuda::unary_dense(op, dtype, in, out, n, on(s, op_name(op)));
          },
      .binary_dense =
          [](Stream* s, BinaryOp op, DType dtype, const void* a, const void* b, void* out,
             std::int64_t n) { cuda::binary_dense(op, dtype, a, b, out, n, on(s, op_name(op))); },
      .binary_scalar_dense =
          [](Stream* s, BinaryOp op, DType dtype, const void* a, double scalar, bool scalar_first,
             void* out, std::int64_t n) {
            cuda::binary_scalar_dense(op, dtype, a, scalar, scalar_first, out, n,
                                      on(s, op_name(op)));
          },
      .copy = [](Stream* s, const ArrayView& in,
                 const ArrayView& out) { cuda::copy(in, out, on(s, "copy")); },
      .fill = [](Stream* s, const ArrayView& out,
                 double value) { cuda::fill(out, value, on(s, "fill")); },
      .arange = [](Stream* s, const ArrayView& out, double start,
                   double step) { cuda::arange(out, start, step, on(s, "arange")); },
      .reduce_all = [](Stream* s, ReduceOp op, const ArrayView& in,
                       const ArrayView& out) { cuda::reduce_all(op, in, out, on(s, op_name(op))); },
      .reduce_axis =
          [](Stream* s, ReduceOp op, const ArrayView& in, int axis, const ArrayView& out) {
            cuda::reduce_axis(op, in, axis, out, on(s, op_name(op)));
          },
      .gemm = [](Stream* s, const ArrayView& a, const ArrayView& b, const ArrayView& c,
                 bool accumulate) { cuda::gemm(a, b, c, on(s, "dot"), accumulate); },
      .random_uniform =
          [](Stream* s, const ArrayView& out, double low, double high, std::uint64_t seed,
             std::uint64_t counter) {
            return cuda::random_uniform(out, low, high, seed, counter, on(s, "random.uniform"));
          },
      .random_normal =
          [](Stream* s, const ArrayView& out, double mean, double stddev, std::uint64_t seed,
             std::uint64_t counter) {
            return cuda::random_normal(out, mean, stddev, seed, counter, on(s, "random.normal"));
          },
      .conv2d =
          [](Stream* s, const ArrayView& x, const ArrayView& weight, const ArrayView& bias,
             const ArrayView& y,
             const Conv2dGeometry& g) { cuda::conv2d(x, weight, bias, y, g, on(s, "conv2d")); },
      .conv2d_backward_data =
          [](Stream* s, const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
             const Conv2dGeometry& g) {
            cuda::conv2d_backward_data(dy, weight, dx, g, on(s, "conv2d_backward_data"));
          },
      .conv2d_backward_weight =
          [](Stream* s, const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
             const Conv2dGeometry& g) {
            cuda::conv2d_backward_weight(x, dy, dweight, g, on(s, "conv2d_backward_weight"));
          },
      .max_pool2d = [](Stream* s, const ArrayView& x, const ArrayView& y,
                       const Pool2dGeometry& g) { cuda::max_pool2d(x, y, g, on(s, "max_pool2d")); },
      .avg_pool2d = [](Stream* s, const ArrayView& x, const ArrayView& y,
                       const Pool2dGeometry& g) { cuda::avg_pool2d(x, y, g, on(s, "avg_pool2d")); },
      .max_pool2d_backward =
          [](Stream* s, const ArrayView& x, const ArrayView& dy, const ArrayView& dx,
             const Pool2dGeometry& g) {
            cuda::max_pool2d_backward(x, dy, dx, g, on(s, "max_pool2d_backward"));
          },
      .avg_pool2d_backward =
          [](Stream* s, const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g) {
            cuda::avg_pool2d_backward(dy, dx, g, on(s, "avg_pool2d_backward"));
          },
      .softmax_rows =
          [](Stream* s, const ArrayView& in, const ArrayView& out, bool log) {
            cuda::softmax_rows(in, out, log, on(s, log ? "log_softmax" : "softmax"));
          },
      .softmax_rows_backward =
          [](Stream* s, const ArrayView& y, const ArrayView& dy, const ArrayView& dx, bool log) {
            cuda::softmax_rows_backward(y, dy, dx, log,
                                        on(s, log ? "log_softmax_backward" : "softmax_backward"));
          },
      .softmax_cross_entropy_rows =
          [](Stream* s, const ArrayView& logits, const ArrayView& labels, const ArrayView& loss,
             const ArrayView& probabilities) {
            cuda::softmax_cross_entropy_rows(logits, labels, loss, probabilities,
                                             on(s, "softmax_cross_entropy"));
          },
      .softmax_cross_entropy_backward =
          [](Stream* s, const ArrayView& probabilities, const ArrayView& labels,
             const ArrayView& head_grad, const ArrayView& dlogits) {
            cuda::softmax_cross_entropy_backward(probabilities, labels, head_grad, dlogits,
                                                 on(s, "softmax_cross_entropy_backward"));
          },
  };
  return table;
}

}  // namespace tandem::ops
