// host_stream_kernels(): the CPU kernels as host work on an accelerator's stream, for backends
// whose memory the host can access (sim, test backends). Each kernel captures its views by
// value and enqueues the CPU kernel with the sim model's cost, computed from the op lists
// (op_kinds.h) and work_cost.h. A philox draw's counter blocks are known before it runs
// (random_blocks), so the draw returns them at launch.
//
// Each adapter also counts the launches the CUDA kernel of the same op makes (kernels, library
// calls; tandem/launch_counters.h), so the profiler shows the same counts on sim as on cuda and
// a test without a GPU can pin them down: one kernel for an element-wise op, a CUB call and a
// finishing kernel for a reduction, a cuBLAS call for a floating gemm (plus a copy per operand
// it must pack), and for a convolution what common/conv_launches.h says.
#include <string>

#include "common/blas_operand.h"
#include "common/conv_launches.h"
#include "common/work_cost.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"
#include "tandem/launch_counters.h"
#include "tandem/ops/cpu/convolution.h"
#include "tandem/ops/cpu/copy.h"
#include "tandem/ops/cpu/elementwise.h"
#include "tandem/ops/cpu/gemm.h"
#include "tandem/ops/cpu/pooling.h"
#include "tandem/ops/cpu/random.h"
#include "tandem/ops/cpu/reduce.h"
#include "tandem/ops/cpu/softmax.h"
#include "tandem/ops/kernels.h"
#include "tandem/ops/philox.h"

namespace tandem::ops {

namespace {

Stream& require_stream(Stream* stream, const char* kernel) {
  if (stream == nullptr) [[unlikely]] {
    throw Error(std::string("tandem: ") + kernel +
                ": a host-stream kernel needs the op's stream (an accelerator op's "
                "RunContext::stream()), got none");
  }
  return *stream;
}

// The CUDA kernels launch nothing for an empty output.
Stream& one_kernel(Stream* stream, const char* kernel, const ArrayView& out) {
  Stream& s = require_stream(stream, kernel);
  if (out.num_elements() != 0) count_kernel_launches();
  return s;
}

Stream& counted(Stream* stream, const char* kernel, LaunchCounts counts) {
  Stream& s = require_stream(stream, kernel);
  count_kernel_launches(counts.kernels);
  count_library_calls(counts.library_calls);
  return s;
}

// Integer division with divisors known only on the device: the kernel, and a memset and a copy
// of the zero-divisor flag (ops/cuda/elementwise.cu).
std::uint32_t division_kernels(BinaryOp op, DType dtype, bool device_divisor) {
  return op == BinaryOp::divide && !is_floating(dtype) && device_divisor ? 3 : 1;
}

LaunchCounts gemm_launches(const ArrayView& a, const ArrayView& b, const ArrayView& c,
                           bool accumulate) {
  if (c.num_elements() == 0) return {};
  if (a.shape[1] == 0) return {accumulate ? 0u : 1u, 0, 0};  // a fill with zeros, or nothing
  if (!is_floating(c.dtype)) return {1, 0, 0};
  // An operand cuBLAS cannot describe is packed with a copy first.
  const auto packs = static_cast<std::uint32_t>(!describe_for_blas(a).usable) +
                     static_cast<std::uint32_t>(!describe_for_blas(b).usable);
  return {packs, 1, 0};
}

LaunchCounts reduce_launches(std::int64_t outputs) {
  return outputs == 0 ? LaunchCounts{} : LaunchCounts{1, 1, 0};
}

WorkCost pass_cost(const ArrayView& view, int operands, double flops) {
  return elementwise_cost(view.num_elements(), view.dtype, operands, flops);
}

// Philox rounds per value: a dozen multiplies and adds.
constexpr double kRandomFlops = 20.0;
// Softmax over rows: max, subtract, exp, sum and a divide (or log) per element.
constexpr double kSoftmaxFlops = 12.0;

std::uint64_t random_blocks(const ArrayView& out) {
  const std::int64_t per_block = out.dtype == DType::float32
                                     ? random::UniformDistribution::values_per_block<float>
                                     : random::UniformDistribution::values_per_block<double>;
  static_assert(random::UniformDistribution::values_per_block<float> ==
                random::NormalDistribution::values_per_block<float>);
  static_assert(random::UniformDistribution::values_per_block<double> ==
                random::NormalDistribution::values_per_block<double>);
  return static_cast<std::uint64_t>((out.num_elements() + per_block - 1) / per_block);
}

}  // namespace

const Kernels& host_stream_kernels() {
  static const Kernels table{
      .unary =
          [](Stream* stream, UnaryOp op, const ArrayView& in, const ArrayView& out) {
            one_kernel(stream, op_name(op), out)
                .enqueue_host([op, in, out] { cpu::unary(op, in, out); },
                              pass_cost(out, 2, flops_per_element(op)));
          },
      .binary =
          [](Stream* stream, BinaryOp op, const ArrayView& a, const ArrayView& b,
             const ArrayView& out) {
            if (out.num_elements() != 0)
              count_kernel_launches(division_kernels(op, out.dtype, true));
            require_stream(stream, op_name(op))
                .enqueue_host([op, a, b, out] { cpu::binary(op, a, b, out); },
                              pass_cost(out, 3, flops_per_element(op)));
          },
      .binary_scalar =
          [](Stream* stream, BinaryOp op, const ArrayView& a, double scalar, bool scalar_first,
             const ArrayView& out) {
            if (out.num_elements() != 0)
              count_kernel_launches(division_kernels(op, out.dtype, scalar_first));
            require_stream(stream, op_name(op))
                .enqueue_host([op, a, scalar, scalar_first,
                               out] { cpu::binary_scalar(op, a, scalar, scalar_first, out); },
                              pass_cost(out, 2, flops_per_element(op)));
          },
      .unary_dense =
          [](Stream* stream, UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n) {
            if (n != 0) count_kernel_launches();
            require_stream(stream, op_name(op))
                .enqueue_host([op, dtype, in, out, n] { cpu::unary_dense(op, dtype, in, out, n); },
                              elementwise_cost(n, dtype, 2, flops_per_element(op)));
          },
      .binary_dense =
          [](Stream* stream, BinaryOp op, DType dtype, const void* a, const void* b, void* out,
             std::int64_t n) {
            if (n != 0) count_kernel_launches(division_kernels(op, dtype, true));
            require_stream(stream, op_name(op))
                .enqueue_host(
                    [op, dtype, a, b, out, n] { cpu::binary_dense(op, dtype, a, b, out, n); },
                    elementwise_cost(n, dtype, 3, flops_per_element(op)));
          },
      .binary_scalar_dense =
          [](Stream* stream, BinaryOp op, DType dtype, const void* a, double scalar,
             bool scalar_first, void* out, std::int64_t n) {
            if (n != 0) count_kernel_launches(division_kernels(op, dtype, scalar_first));
            require_stream(stream, op_name(op))
                .enqueue_host(
                    [op, dtype, a, scalar, scalar_first, out, n] {
                      cpu::binary_scalar_dense(op, dtype, a, scalar, scalar_first, out, n);
                    },
                    elementwise_cost(n, dtype, 2, flops_per_element(op)));
          },
      .copy =
          [](Stream* stream, const ArrayView& in, const ArrayView& out) {
            one_kernel(stream, "copy", out)
                .enqueue_host([in, out] { cpu::copy(in, out); }, pass_cost(out, 2, 0.0));
          },
      .fill =
          [](Stream* stream, const ArrayView& out, double value) {
            one_kernel(stream, "fill", out)
                .enqueue_host([out, value] { cpu::fill(out, value); }, pass_cost(out, 1, 0.0));
          },
      .arange =
          [](Stream* stream, const ArrayView& out, double start, double step) {
            one_kernel(stream, "arange", out)
                .enqueue_host([out, start, step] { cpu::arange(out, start, step); },
                              pass_cost(out, 1, 1.0));
          },
      .reduce_all =
          [](Stream* stream, ReduceOp op, const ArrayView& in, const ArrayView& out) {
            counted(stream, op_name(op), reduce_launches(1))
                .enqueue_host([op, in, out] { cpu::reduce_all(op, in, out); },
                              pass_cost(in, 1, 1.0));
          },
      .reduce_axis =
          [](Stream* stream, ReduceOp op, const ArrayView& in, int axis, const ArrayView& out) {
            counted(stream, op_name(op), reduce_launches(out.num_elements()))
                .enqueue_host([op, in, axis, out] { cpu::reduce_axis(op, in, axis, out); },
                              pass_cost(in, 1, 1.0));
          },
      .gemm =
          [](Stream* stream, const ArrayView& a, const ArrayView& b, const ArrayView& c,
             bool accumulate) {
            WorkCost cost = gemm_cost(c.shape[0], c.shape[1], a.shape[1], c.dtype);
            // Accumulating reads c as well as writing it.
            if (accumulate)
              cost.bytes += static_cast<double>(c.num_elements() * dtype_size(c.dtype));
            counted(stream, "dot", gemm_launches(a, b, c, accumulate))
                .enqueue_host([a, b, c, accumulate] { cpu::gemm(a, b, c, accumulate); }, cost);
          },
      .random_uniform =
          [](Stream* stream, const ArrayView& out, double low, double high, std::uint64_t seed,
             std::uint64_t counter) {
            one_kernel(stream, "random.uniform", out)
                .enqueue_host([out, low, high, seed,
                               counter] { cpu::random_uniform(out, low, high, seed, counter); },
                              pass_cost(out, 1, kRandomFlops));
            return random_blocks(out);
          },
      .random_normal =
          [](Stream* stream, const ArrayView& out, double mean, double stddev, std::uint64_t seed,
             std::uint64_t counter) {
            one_kernel(stream, "random.normal", out)
                .enqueue_host([out, mean, stddev, seed,
                               counter] { cpu::random_normal(out, mean, stddev, seed, counter); },
                              pass_cost(out, 1, kRandomFlops));
            return random_blocks(out);
          },
      .conv2d =
          [](Stream* stream, const ArrayView& x, const ArrayView& weight, const ArrayView& bias,
             const ArrayView& y, const Conv2dGeometry& g) {
            counted(stream, "conv2d",
                    conv_launches(g, ConvPass::forward, dtype_size(y.dtype), bias.data != nullptr,
                                  y.num_elements()))
                .enqueue_host([x, weight, bias, y, g] { cpu::conv2d(x, weight, bias, y, g); },
                              conv_cost(g, y.dtype));
          },
      .conv2d_backward_data =
          [](Stream* stream, const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
             const Conv2dGeometry& g) {
            counted(stream, "conv2d_backward_data",
                    conv_launches(g, ConvPass::backward_data, dtype_size(dx.dtype), false,
                                  dx.num_elements()))
                .enqueue_host([dy, weight, dx, g] { cpu::conv2d_backward_data(dy, weight, dx, g); },
                              conv_cost(g, dx.dtype));
          },
      .conv2d_backward_weight =
          [](Stream* stream, const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
             const Conv2dGeometry& g) {
            counted(stream, "conv2d_backward_weight",
                    conv_launches(g, ConvPass::backward_weight, dtype_size(dweight.dtype), false,
                                  dweight.num_elements()))
                .enqueue_host(
                    [x, dy, dweight, g] { cpu::conv2d_backward_weight(x, dy, dweight, g); },
                    conv_cost(g, dweight.dtype));
          },
      .max_pool2d =
          [](Stream* stream, const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g) {
            one_kernel(stream, "max_pool2d", y)
                .enqueue_host([x, y, g] { cpu::max_pool2d(x, y, g); }, pool_cost(g, y.dtype));
          },
      .avg_pool2d =
          [](Stream* stream, const ArrayView& x, const ArrayView& y, const Pool2dGeometry& g) {
            one_kernel(stream, "avg_pool2d", y)
                .enqueue_host([x, y, g] { cpu::avg_pool2d(x, y, g); }, pool_cost(g, y.dtype));
          },
      .max_pool2d_backward =
          [](Stream* stream, const ArrayView& x, const ArrayView& dy, const ArrayView& dx,
             const Pool2dGeometry& g) {
            one_kernel(stream, "max_pool2d_backward", dx)
                .enqueue_host([x, dy, dx, g] { cpu::max_pool2d_backward(x, dy, dx, g); },
                              pool_cost(g, dx.dtype));
          },
      .avg_pool2d_backward =
          [](Stream* stream, const ArrayView& dy, const ArrayView& dx, const Pool2dGeometry& g) {
            one_kernel(stream, "avg_pool2d_backward", dx)
                .enqueue_host([dy, dx, g] { cpu::avg_pool2d_backward(dy, dx, g); },
                              pool_cost(g, dx.dtype));
          },
      .softmax_rows =
          [](Stream* stream, const ArrayView& in, const ArrayView& out, bool log) {
            one_kernel(stream, log ? "log_softmax" : "softmax", out)
                .enqueue_host([in, out, log] { cpu::softmax_rows(in, out, log); },
                              pass_cost(out, 2, kSoftmaxFlops));
          },
      .softmax_rows_backward =
          [](Stream* stream, const ArrayView& y, const ArrayView& dy, const ArrayView& dx,
             bool log) {
            one_kernel(stream, log ? "log_softmax_backward" : "softmax_backward", dx)
                .enqueue_host([y, dy, dx, log] { cpu::softmax_rows_backward(y, dy, dx, log); },
                              pass_cost(dx, 3, kSoftmaxFlops));
          },
      .softmax_cross_entropy_rows =
          [](Stream* stream, const ArrayView& logits, const ArrayView& labels,
             const ArrayView& loss, const ArrayView& probabilities) {
            one_kernel(stream, "softmax_cross_entropy", loss)
                .enqueue_host(
                    [logits, labels, loss, probabilities] {
                      cpu::softmax_cross_entropy_rows(logits, labels, loss, probabilities);
                    },
                    pass_cost(logits, probabilities.data != nullptr ? 2 : 1, kSoftmaxFlops));
          },
      .softmax_cross_entropy_backward =
          [](Stream* stream, const ArrayView& probabilities, const ArrayView& labels,
             const ArrayView& head_grad, const ArrayView& dlogits) {
            one_kernel(stream, "softmax_cross_entropy_backward", dlogits)
                .enqueue_host(
                    [probabilities, labels, head_grad, dlogits] {
                      cpu::softmax_cross_entropy_backward(probabilities, labels, head_grad,
                                                          dlogits);
                    },
                    pass_cost(dlogits, 2, 2.0));
          },
  };
  return table;
}

}  // namespace tandem::ops
