// The cuda backend's kernel table: the gpu(i) kernels of this folder, enqueued on the op's CUDA
// stream (they throw tandem::Error when called without one), one per row of
// TANDEM_KERNEL_FAMILIES (kernels.h).
#include <string>

#include "kernel_tables.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"
#include "tandem/ops/cuda/batch_norm.h"
#include "tandem/ops/cuda/convolution.h"
#include "tandem/ops/cuda/copy.h"
#include "tandem/ops/cuda/elementwise.h"
#include "tandem/ops/cuda/gemm.h"
#include "tandem/ops/cuda/optimizer_update.h"
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

// The kernels of this folder, called as the rows of TANDEM_KERNEL_FAMILIES (kernels.h) list
// their arguments, with the stream last.
namespace calls {
using namespace cuda;
void gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c, bool accumulate,
          Stream& stream) {
  cuda::gemm(a, b, c, stream, accumulate);
}
}  // namespace calls

}  // namespace

const Kernels& cuda_kernels() {
  static const Kernels table{
#define TANDEM_CUDA_KERNEL(Result, name, parameters, arguments, label, ...) \
  .name = [](Stream* s, TANDEM_KERNEL_UNPAREN parameters) -> Result {       \
    return calls::name(TANDEM_KERNEL_UNPAREN arguments, on(s, label));      \
  },
      TANDEM_KERNEL_FAMILIES(TANDEM_CUDA_KERNEL)
#undef TANDEM_CUDA_KERNEL
  };
  return table;
}

}  // namespace tandem::ops
