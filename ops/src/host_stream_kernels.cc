// host_stream_kernels(): the CPU kernels as host work on an accelerator's stream, for backends
// whose memory the host can access (sim, test backends). Each kernel captures its views by
// value and enqueues the CPU kernel with the sim model's cost of its row of
// TANDEM_KERNEL_FAMILIES (kernels.h), computed from the op lists (op_kinds.h) and work_cost.h. A
// philox draw's counter blocks are known before it runs (random_blocks), so the draw returns them
// at launch.
#include <string>

#include "common/work_cost.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"
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
                                  launch_result)                                        \
  .name = [](Stream* stream, TANDEM_KERNEL_UNPAREN parameters) -> Result {              \
    require_stream(stream, label)                                                       \
        .enqueue_host([=] { cpu::name(TANDEM_KERNEL_UNPAREN arguments); }, sim_cost);   \
    return launch_result;                                                               \
  },
      TANDEM_KERNEL_FAMILIES(TANDEM_HOST_STREAM_KERNEL)
#undef TANDEM_HOST_STREAM_KERNEL
  };
  return table;
}

}  // namespace tandem::ops
