// host_stream_kernels(): the CPU kernels as host work on an accelerator's stream, for backends
// whose memory the host can access (sim, test backends). Each kernel captures its views by
// value and enqueues the CPU kernel with the sim model's cost of its row of
// TANDEM_KERNEL_FAMILIES (kernels.h), computed from the op lists (op_kinds.h) and work_cost.h. A
// philox draw's counter blocks are known before it runs (random_blocks), so the draw returns them
// at launch.
//
// Each adapter also counts the launches the CUDA kernel of the same op makes (the row's
// `sim_launches`: kernels, library calls; tandem/launch_counters.h), so the profiler shows the
// same counts on sim as on cuda and a test without a GPU can pin them down: one kernel for an
// element-wise op, a CUB call and a finishing kernel for a reduction, a cuBLAS call for a
// floating gemm (plus a copy per operand it must pack), for a reduction along an axis what
// common/reduce_plan.h says, and for a convolution what common/conv_launches.h says, and for a
// grouped optimizer update what common/update_group_plan.h says.
#include <string>

#include "common/blas_operand.h"
#include "common/conv_launches.h"
#include "common/reduce_plan.h"
#include "common/update_group_plan.h"
#include "common/work_cost.h"
#include "kernel_declarations.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"
#include "tandem/launch_counters.h"
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

Stream& counted(Stream* stream, const char* kernel, LaunchCounts counts) {
  Stream& s = require_stream(stream, kernel);
  count_kernel_launches(counts.kernels);
  count_library_calls(counts.library_calls);
  return s;
}

// The CUDA kernels launch nothing for an empty output.
LaunchCounts dense_launches(std::int64_t n) {
  return n == 0 ? LaunchCounts{} : LaunchCounts{1, 0, 0};
}

LaunchCounts one_launch(const ArrayView& out) {
  return dense_launches(out.num_elements());
}

// Batch norm's two kernels per pass (ops/cuda/batch_norm.cu): partial sums per channel and
// part, then the parts combined and applied.
LaunchCounts batch_norm_launches(const ArrayView& x) {
  return x.num_elements() == 0 ? LaunchCounts{} : LaunchCounts{2, 0, 0};
}

// Integer division with divisors known only on the device: the kernel, and a memset and a copy
// of the zero-divisor flag (ops/cuda/elementwise.cu).
LaunchCounts division_launches(BinaryOp op, DType dtype, bool device_divisor, std::int64_t n) {
  if (n == 0) return {};
  return {op == BinaryOp::divide && !is_floating(dtype) && device_divisor ? 3u : 1u, 0, 0};
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

// A grouped update costs one pass over all its tensors' elements.
WorkCost group_cost(const UpdateGroup& group, int operands, double flops) {
  return elementwise_cost(group.elements(), group.dtype, operands, flops);
}

bool group_has_momentum(const UpdateGroup& group) {
  for (const UpdateTensors& t : group.tensors) {
    if (t.first_moment != nullptr) return true;
  }
  return false;
}

LaunchCounts group_launches(const UpdateGroup& group) {
  return {update_group_tables(group), 0, 0};
}

// Philox rounds per value: a dozen multiplies and adds.
constexpr double kRandomFlops = 20.0;
// Softmax over rows: max, subtract, exp, sum and a divide (or log) per element.
constexpr double kSoftmaxFlops = 12.0;
// Batch norm per element and pass: a subtract, a multiply-add, the sums.
constexpr double kBatchNormFlops = 4.0;

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

// A gemm reads a and b and writes c; accumulating reads c as well.
WorkCost gemm_work(const ArrayView& a, const ArrayView&, const ArrayView& c, bool accumulate) {
  WorkCost cost = gemm_cost(c.shape[0], c.shape[1], a.shape[1], c.dtype);
  if (accumulate) cost.bytes += static_cast<double>(c.num_elements() * dtype_size(c.dtype));
  return cost;
}

}  // namespace

const Kernels& host_stream_kernels() {
  static const Kernels table{
#define TANDEM_HOST_STREAM_KERNEL(Result, name, parameters, arguments, label, sim_cost, \
                                  launch_result, sim_launches)                          \
  .name = [](Stream* stream, TANDEM_KERNEL_UNPAREN parameters) -> Result {              \
    counted(stream, label, sim_launches)                                                \
        .enqueue_host([=] { cpu::name(TANDEM_KERNEL_UNPAREN arguments); }, sim_cost);   \
    return launch_result;                                                               \
  },
      TANDEM_KERNEL_FAMILIES(TANDEM_HOST_STREAM_KERNEL)
#undef TANDEM_HOST_STREAM_KERNEL
  };
  return table;
}

}  // namespace tandem::ops
