// The cpu backend's kernel table: the CPU kernels, run inline in the calling thread (a CPU op's
// worker, or code reading host memory). The stream argument is ignored.
#include "tandem/ops/cpu/batch_norm.h"
#include "tandem/ops/cpu/convolution.h"
#include "tandem/ops/cpu/copy.h"
#include "tandem/ops/cpu/elementwise.h"
#include "tandem/ops/cpu/gemm.h"
#include "tandem/ops/cpu/optimizer_update.h"
#include "tandem/ops/cpu/pooling.h"
#include "tandem/ops/cpu/random.h"
#include "tandem/ops/cpu/reduce.h"
#include "tandem/ops/cpu/softmax.h"
#include "tandem/ops/kernels.h"

namespace tandem::ops {

const Kernels& host_kernels() {
  static const Kernels table{
#define TANDEM_CPU_KERNEL(Result, name, parameters, arguments, ...) \
  .name = [](Stream*, TANDEM_KERNEL_UNPAREN parameters) -> Result { \
    return cpu::name(TANDEM_KERNEL_UNPAREN arguments);              \
  },
      TANDEM_KERNEL_FAMILIES(TANDEM_CPU_KERNEL)
#undef TANDEM_CPU_KERNEL
  };
  return table;
}

}  // namespace tandem::ops
