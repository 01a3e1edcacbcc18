// The cuda backend's kernel table: the gpu(i) kernels of this folder, enqueued on the op's CUDA
// stream (they throw tandem::Error when called without one), one per row of
// TANDEM_KERNEL_FAMILIES (kernels.h).
#include <string>

#include "kernel_declarations.h"
#include "kernel_tables.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"
#include "tandem/ops/cuda/convolution.h"
#include "tandem/ops/cuda/gemm.h"

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

// The kernels whose entry points take more than their rows (kernel_declarations.h), called as
// the rows list their arguments, with the stream last: gemm's flag comes after the stream, and
// the convolutions choose their path (cuDNN or im2col) automatically.
void cuda::gemm(const ArrayView& a, const ArrayView& b, const ArrayView& c, bool accumulate,
                Stream& stream) {
  cuda::gemm(a, b, c, stream, accumulate);
}
void cuda::conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias,
                  const ArrayView& y, const Conv2dGeometry& g, Stream& stream) {
  cuda::conv2d(x, weight, bias, y, g, stream, ConvPath::automatic);
}
void cuda::conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                                const Conv2dGeometry& g, Stream& stream) {
  cuda::conv2d_backward_data(dy, weight, dx, g, stream, ConvPath::automatic);
}
void cuda::conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                                  const Conv2dGeometry& g, Stream& stream) {
  cuda::conv2d_backward_weight(x, dy, dweight, g, stream, ConvPath::automatic);
}

const Kernels& cuda_kernels() {
  static const Kernels table{
#define TANDEM_CUDA_KERNEL(Result, name, parameters, arguments, label, ...) \
  .name = [](Stream* s, TANDEM_KERNEL_UNPAREN parameters) -> Result {       \
    return cuda::name(TANDEM_KERNEL_UNPAREN arguments, on(s, label));       \
  },
      TANDEM_KERNEL_FAMILIES(TANDEM_CUDA_KERNEL)
#undef TANDEM_CUDA_KERNEL
  };
  return table;
}

}  // namespace tandem::ops
