// The built-in kernel tables the registry starts with (kernels.h has host_kernels and
// host_stream_kernels).
#pragma once

#include "tandem/ops/kernels.h"

namespace tandem::ops {

#ifdef TANDEM_HAVE_CUDA
// The gpu(i) kernels (ops/cuda/), enqueued on the op's CUDA stream.
const Kernels& cuda_kernels();
#endif

}  // namespace tandem::ops
