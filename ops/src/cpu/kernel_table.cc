// The cpu backend's kernel table: the CPU kernels, run inline in the calling thread (a CPU op's
// worker, or code reading host memory). The stream argument is ignored.
#include "tandem/ops/cpu/convolution.h"
#include "tandem/ops/cpu/copy.h"
#include "tandem/ops/cpu/elementwise.h"
#include "tandem/ops/cpu/gemm.h"
#include "tandem/ops/cpu/pooling.h"
#include "tandem/ops/cpu/random.h"
#include "tandem/ops/cpu/reduce.h"
#include "tandem/ops/cpu/softmax.h"
#include "tandem/ops/kernels.h"

namespace tandem::ops {

const Kernels& host_kernels() {
  static const Kernels table{
      .unary = [](Stream*, UnaryOp op, const ArrayView& in,
                  const ArrayView& out) { cpu::unary(op, in, out); },
      .binary = [](Stream*, BinaryOp op, const ArrayView& a, const ArrayView& b,
                   const ArrayView& out) { cpu::binary(op, a, b, out); },
      .binary_scalar =
          [](Stream*, BinaryOp op, const ArrayView& a, double scalar, bool scalar_first,
             const ArrayView& out) { cpu::binary_scalar(op, a, scalar, scalar_first, out); },
      .unary_dense = [](Stream*, UnaryOp op, DType dtype, const void* in, void* out,
                        std::int64_t n) { cpu::unary_dense(op, dtype, in, out, n); },
      .binary_dense = [](Stream*, BinaryOp op, DType dtype, const void* a, const void* b, void* out,
                         std::int64_t n) { cpu::binary_dense(op, dtype, a, b, out, n); },
      .binary_scalar_dense =
          [](Stream*, BinaryOp op, DType dtype, const void* a, double scalar, bool scalar_first,
             void* out, std::int64_t n) {
            cpu::binary_scalar_dense(op, dtype, a, scalar, scalar_first, out, n);
          },
      .copy = [](Stream*, const ArrayView& in, const ArrayView& out) { cpu::copy(in, out); },
      .fill = [](Stream*, const ArrayView& out, double value) { cpu::fill(out, value); },
      .arange = [](Stream*, const ArrayView& out, double start,
                   double step) { cpu::arange(out, start, step); },
      .reduce_all = [](Stream*, ReduceOp op, const ArrayView& in,
                       const ArrayView& out) { cpu::reduce_all(op, in, out); },
      .reduce_axis = [](Stream*, ReduceOp op, const ArrayView& in, int axis,
                        const ArrayView& out) { cpu::reduce_axis(op, in, axis, out); },
      .gemm = [](Stream*, const ArrayView& a, const ArrayView& b, const ArrayView& c,
                 bool accumulate) { cpu::gemm(a, b, c, accumulate); },
      .random_uniform =
          [](Stream*, const ArrayView& out, double low, double high, std::uint64_t seed,
             std::uint64_t counter) { return cpu::random_uniform(out, low, high, seed, counter); },
      .random_normal =
          [](Stream*, const ArrayView& out, double mean, double stddev, std::uint64_t seed,
             std::uint64_t counter) {
            return cpu::random_normal(out, mean, stddev, seed, counter);
          },
      .conv2d = [](Stream*, const ArrayView& x, const ArrayView& weight, const ArrayView& bias,
                   const ArrayView& y,
                   const Conv2dGeometry& g) { cpu::conv2d(x, weight, bias, y, g); },
      .conv2d_backward_data =
          [](Stream*, const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
             const Conv2dGeometry& g) { cpu::conv2d_backward_data(dy, weight, dx, g); },
      .conv2d_backward_weight =
          [](Stream*, const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
             const Conv2dGeometry& g) { cpu::conv2d_backward_weight(x, dy, dweight, g); },
      .max_pool2d = [](Stream*, const ArrayView& x, const ArrayView& y,
                       const Pool2dGeometry& g) { cpu::max_pool2d(x, y, g); },
      .avg_pool2d = [](Stream*, const ArrayView& x, const ArrayView& y,
                       const Pool2dGeometry& g) { cpu::avg_pool2d(x, y, g); },
      .max_pool2d_backward =
          [](Stream*, const ArrayView& x, const ArrayView& dy, const ArrayView& dx,
             const Pool2dGeometry& g) { cpu::max_pool2d_backward(x, dy, dx, g); },
      .avg_pool2d_backward = [](Stream*, const ArrayView& dy, const ArrayView& dx,
                                const Pool2dGeometry& g) { cpu::avg_pool2d_backward(dy, dx, g); },
      .softmax_rows = [](Stream*, const ArrayView& in, const ArrayView& out,
                         bool log) { cpu::softmax_rows(in, out, log); },
      .softmax_rows_backward = [](Stream*, const ArrayView& y, const ArrayView& dy,
                                  const ArrayView& dx,
                                  bool log) { cpu::softmax_rows_backward(y, dy, dx, log); },
      .softmax_cross_entropy_rows =
          [](Stream*, const ArrayView& logits, const ArrayView& labels, const ArrayView& loss,
             const ArrayView& probabilities) {
            cpu::softmax_cross_entropy_rows(logits, labels, loss, probabilities);
          },
      .softmax_cross_entropy_backward =
          [](Stream*, const ArrayView& probabilities, const ArrayView& labels,
             const ArrayView& head_grad, const ArrayView& dlogits) {
            cpu::softmax_cross_entropy_backward(probabilities, labels, head_grad, dlogits);
          },
  };
  return table;
}

}  // namespace tandem::ops
