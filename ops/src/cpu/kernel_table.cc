// The cpu backend's kernel table: the CPU kernels, run inline in the calling thread (a CPU op's
// worker, or code reading host memory). The stream argument is ignored.
#include "kernel_declarations.h"
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
