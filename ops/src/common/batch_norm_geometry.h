// The layout of a batch-norm kernel's operands, checked the same way by the CPU and CUDA
// kernels: x (and y, dy, dx) dense N x C x S..., the per-channel operands dense vectors of C,
// every floating operand of x's dtype. The front end guarantees all of it; a caller that does
// not gets a tandem::Error naming the operand instead of a read out of bounds.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "tandem/errors.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/host_device.h"

namespace tandem::ops {

struct BatchNormGeometry {
  std::int64_t batch = 0;     // N
  std::int64_t channels = 0;  // C
  std::int64_t spatial = 0;   // S: the product of the axes after the channels
  TANDEM_HOST_DEVICE std::int64_t per_channel() const { return batch * spatial; }  // M
};

// `images`: the N x C x ... operands (x first); `vectors`: the per-channel ones. An operand
// with data == nullptr (an output not asked for) is skipped.
inline BatchNormGeometry batch_norm_geometry(
    const char* op, std::initializer_list<std::pair<const char*, const ArrayView*>> images,
    std::initializer_list<std::pair<const char*, const ArrayView*>> vectors) {
  const ArrayView& x = *images.begin()->second;
  const auto fail = [op](const std::string& what) {
    throw Error(std::string("tandem: ") + op + ": " + what);
  };
  if (x.ndim() < 2) fail("x must be N x C x ..., got shape " + x.shape.to_string());
  BatchNormGeometry g;
  g.batch = x.shape[0];
  g.channels = x.shape[1];
  g.spatial = 1;
  for (int axis = 2; axis < x.ndim(); ++axis) g.spatial *= x.shape[axis];
  for (const auto& [name, view] : images) {
    if (view->data == nullptr) continue;
    if (view->shape != x.shape || view->dtype != x.dtype || !view->is_contiguous()) {
      fail(std::string(name) + " must be a dense " + dtype_name(x.dtype) + " array of shape " +
           x.shape.to_string() + ", got " + dtype_name(view->dtype) + " " +
           view->shape.to_string() + (view->is_contiguous() ? "" : " (strided)"));
    }
  }
  for (const auto& [name, view] : vectors) {
    if (view->data == nullptr) continue;
    if (view->ndim() != 1 || view->shape[0] != g.channels || view->dtype != x.dtype ||
        !view->is_contiguous()) {
      fail(std::string(name) + " must be a dense " + dtype_name(x.dtype) + " vector of " +
           std::to_string(g.channels) + " channels, got " + dtype_name(view->dtype) + " " +
           view->shape.to_string());
    }
  }
  return g;
}

// The forward's and the backward's operands, named as the kernels.h rows name them.
inline BatchNormGeometry batch_norm_forward_geometry(
    const ArrayView& x, const ArrayView& gamma, const ArrayView& beta,
    const ArrayView& running_mean, const ArrayView& running_var, const ArrayView& y,
    const ArrayView& saved_mean, const ArrayView& saved_inv_std) {
  return batch_norm_geometry("batch_norm", {{"x", &x}, {"y", &y}},
                             {{"gamma", &gamma},
                              {"beta", &beta},
                              {"running_mean", &running_mean},
                              {"running_var", &running_var},
                              {"saved_mean", &saved_mean},
                              {"saved_inv_std", &saved_inv_std}});
}

inline BatchNormGeometry batch_norm_backward_geometry(const ArrayView& x, const ArrayView& dy,
                                                      const ArrayView& gamma,
                                                      const ArrayView& saved_mean,
                                                      const ArrayView& saved_inv_std,
                                                      const ArrayView& dx, const ArrayView& dgamma,
                                                      const ArrayView& dbeta) {
  return batch_norm_geometry("batch_norm_backward", {{"x", &x}, {"dy", &dy}, {"dx", &dx}},
                             {{"gamma", &gamma},
                              {"saved_mean", &saved_mean},
                              {"saved_inv_std", &saved_inv_std},
                              {"dgamma", &dgamma},
                              {"dbeta", &dbeta}});
}

}  // namespace tandem::ops
