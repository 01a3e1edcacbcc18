#include "tandem/nn/gradient_clipping.h"

#include <cmath>
#include <string>
#include <utility>

#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/reduce.h"

namespace tandem::nn {

nd::NDArray clip_global_norm(const std::vector<nd::NDArray>& arrays, double max_norm) {
  if (!(max_norm > 0) || !std::isfinite(max_norm)) {
    throw Error("tandem: clip_global_norm: max_norm must be a finite value > 0, got " +
                std::to_string(max_norm));
  }
  if (arrays.empty()) throw Error("tandem: clip_global_norm: no arrays to clip");
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const nd::NDArray& array = arrays[i];
    if (!array.defined() || !ops::is_floating(array.dtype())) {
      throw Error("tandem: clip_global_norm: array " + std::to_string(i) +
                  " must be a defined floating array, got " +
                  (array.defined() ? std::string(nd::dtype_name(array.dtype()))
                                   : std::string("an undefined NDArray")));
    }
    if (array.device() != arrays[0].device()) {
      throw Error("tandem: clip_global_norm: every array must be on one device, array 0 is on " +
                  to_string(arrays[0].device()) + " and array " + std::to_string(i) + " on " +
                  to_string(array.device()) + " (clip each device's arrays separately)");
    }
  }
  const auto paused = autograd::pause();
  nd::NDArray squares = nd::square(arrays[0].astype(nd::float64)).sum();
  for (std::size_t i = 1; i < arrays.size(); ++i) {
    squares = squares + nd::square(arrays[i].astype(nd::float64)).sum();
  }
  const nd::NDArray norm = nd::sqrt(squares);
  const nd::NDArray scale = max_norm / nd::maximum(norm, max_norm);
  for (nd::NDArray array : arrays) array *= scale.astype(array.dtype());
  return norm;
}

nd::NDArray clip_global_norm(const ParameterDict& params, double max_norm) {
  std::vector<std::pair<Device, std::vector<nd::NDArray>>> by_device;
  for (const ParameterDict::Entry& entry : params) {
    const Parameter& parameter = *entry.second;
    if (parameter.grad_req() == GradReq::null) continue;
    if (!parameter.initialized()) {
      throw Error("tandem: clip_global_norm: the parameter '" + parameter.name() +
                  "' is not initialized (it has no gradient yet)");
    }
    for (const nd::NDArray& grad : parameter.list_grad()) {
      auto group = by_device.begin();
      while (group != by_device.end() && group->first != grad.device()) ++group;
      if (group == by_device.end()) {
        by_device.emplace_back(grad.device(), std::vector<nd::NDArray>{});
        group = std::prev(by_device.end());
      }
      group->second.push_back(grad);
    }
  }
  if (by_device.empty()) throw Error("tandem: clip_global_norm: no parameter has a gradient");
  nd::NDArray first_norm;
  for (const auto& [device, grads] : by_device) {
    nd::NDArray norm = clip_global_norm(grads, max_norm);
    if (!first_norm.defined()) first_norm = norm;
  }
  return first_norm;
}

}  // namespace tandem::nn
