// The convolution's bias gradient (the conv2d_backward_bias family, kernels.h) as its kernels
// see it: dbias[c] = the sum of dy[n, c, h, w] over the batch and the spatial axes, dy a dense
// N x C x H x W view, dbias a dense view of C elements of dy's floating dtype. Shared by the CPU
// and CUDA kernels so both refuse the same calls with the same words.
#pragma once

#include <cstdint>
#include <string>

#include "tandem/errors.h"
#include "tandem/ops/array_view.h"

namespace tandem::ops {

struct ConvBiasShape {
  std::int64_t batch = 0, channels = 0, spatial = 0;  // N, C, H * W
};

inline ConvBiasShape conv_bias_shape(const char* op, const ArrayView& dy, const ArrayView& dbias) {
  if (dy.shape.ndim() != 4 || !dy.is_contiguous() || dbias.shape.ndim() != 1 ||
      !dbias.is_contiguous() || dbias.shape[0] != dy.shape[1] || dbias.dtype != dy.dtype) {
    throw Error(std::string("tandem: ") + op + ": takes a dense N x C x H x W gradient and a " +
                "dense bias gradient of C elements of its dtype, got " + dtype_name(dy.dtype) +
                " " + dy.shape.to_string() + " and " + dtype_name(dbias.dtype) + " " +
                dbias.shape.to_string());
  }
  return {dy.shape[0], dy.shape[1], dy.shape[2] * dy.shape[3]};
}

}  // namespace tandem::ops
