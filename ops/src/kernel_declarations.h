// Every kernel family's CPU and CUDA entry points, declared from its row of
// TANDEM_KERNEL_FAMILIES (kernels.h), so a family's signature is written once:
//
//   cpu::name(parameters)                           (ops/src/cpu/*.cc)
//   cuda::name(parameters, tandem::Stream& stream)  (ops/cuda/*.cu: enqueued on the stream)
//
// The kernel tables (cpu/kernel_table.cc, host_stream_kernels.cc, cuda/kernel_table.cc) and the
// file that defines a family's kernels include this header: a definition whose signature does
// not match its row is a compile error (-Wmissing-declarations) or a link error, never a
// silently different kernel. A new family needs no backend header of its own.
#pragma once

#include "tandem/ops/kernels.h"

namespace tandem {
class Stream;
}

namespace tandem::ops {

namespace cpu {
#define TANDEM_DECLARE_CPU_KERNEL(Result, name, parameters, ...) \
  Result name(TANDEM_KERNEL_UNPAREN parameters);
TANDEM_KERNEL_FAMILIES(TANDEM_DECLARE_CPU_KERNEL)
#undef TANDEM_DECLARE_CPU_KERNEL
}  // namespace cpu

namespace cuda {
#define TANDEM_DECLARE_CUDA_KERNEL(Result, name, parameters, ...) \
  Result name(TANDEM_KERNEL_UNPAREN parameters, tandem::Stream& stream);
TANDEM_KERNEL_FAMILIES(TANDEM_DECLARE_CUDA_KERNEL)
#undef TANDEM_DECLARE_CUDA_KERNEL
}  // namespace cuda

}  // namespace tandem::ops
