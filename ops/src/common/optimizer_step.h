// The per-element arithmetic of the fused optimizer updates, shared by the CPU and CUDA kernels:
// the operations of nn::SGD's and nn::Adam's unfused element-wise ops, in their order, each
// rounded to T as those ops round it (a scalar is converted to T first, as binary_scalar does),
// so a fused update gives the bits of the op-by-op one.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "tandem/errors.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/host_device.h"
#include "tandem/ops/kernels.h"

namespace tandem::ops {

template <class T>
struct SgdElement {
  T keep;        // 1 - decay
  T grad_scale;  // lr * rescale
  T decay;       // lr * wd
  T momentum;
  bool decays;

  SgdElement(double grad_scale_, double decay_, double momentum_)
      : keep(static_cast<T>(1.0 - decay_)),
        grad_scale(static_cast<T>(grad_scale_)),
        decay(static_cast<T>(decay_)),
        momentum(static_cast<T>(momentum_)),
        decays(decay_ != 0.0) {}

  // Without momentum: w *= 1 - decay; w -= g * grad_scale.
  TANDEM_HOST_DEVICE void operator()(T& w, T g) const {
    if (decays) w = w * keep;
    const T step = g * grad_scale;
    w = w - step;
  }
  // With momentum: m *= momentum; m -= g * grad_scale; m -= w * decay; w += m.
  TANDEM_HOST_DEVICE void operator()(T& w, T g, T& m) const {
    m = m * momentum;
    const T step = g * grad_scale;
    m = m - step;
    if (decays) {
      const T decayed = w * decay;
      m = m - decayed;
    }
    w = w + m;
  }
};

template <class T>
struct AdamElement {
  T rescale, wd, beta1, keep1, beta2, keep2, epsilon, step_size;
  bool rescales, decays;

  explicit AdamElement(const AdamStep& s)
      : rescale(static_cast<T>(s.rescale)),
        wd(static_cast<T>(s.wd)),
        beta1(static_cast<T>(s.beta1)),
        keep1(static_cast<T>(1.0 - s.beta1)),
        beta2(static_cast<T>(s.beta2)),
        keep2(static_cast<T>(1.0 - s.beta2)),
        epsilon(static_cast<T>(s.epsilon)),
        step_size(static_cast<T>(s.step_size)),
        rescales(s.rescale != 1.0),
        decays(s.wd != 0.0) {}

  TANDEM_HOST_DEVICE void operator()(T& w, T g, T& mean, T& var) const {
    if (rescales) g = g * rescale;
    if (decays) {
      const T decayed = w * wd;
      g = g + decayed;
    }
    mean = mean * beta1;
    const T mean_step = g * keep1;
    mean = mean + mean_step;
    var = var * beta2;
    const T square = g * g;
    const T var_step = square * keep2;
    var = var + var_step;
    const T root = std::sqrt(var);
    const T denominator = root + epsilon;
    const T ratio = mean / denominator;
    const T step = ratio * step_size;
    w = w - step;
  }
};

// Every operand dense, of the weight's shape and floating dtype (an absent one, data ==
// nullptr, is skipped); the front end guarantees it, a caller that does not gets an error.
inline std::int64_t update_elements(const char* op, const ArrayView& weight,
                                    std::initializer_list<const ArrayView*> others) {
  for (const ArrayView* view : others) {
    if (view->data == nullptr) continue;
    if (!(view->shape == weight.shape) || view->dtype != weight.dtype || !view->is_contiguous()) {
      throw Error(std::string("tandem: ") + op + ": every operand must be a dense " +
                  dtype_name(weight.dtype) + " array of shape " + weight.shape.to_string() +
                  ", got " + dtype_name(view->dtype) + " " + view->shape.to_string());
    }
  }
  if (!weight.is_contiguous()) {
    throw Error(std::string("tandem: ") + op + ": the weight must be dense");
  }
  return weight.num_elements();
}

// A grouped update's tensors (update_group.h) as its kernels need them: a weight and a gradient
// each, `moments` state arrays each (Adam: 2; -1 for SGD: 0 or 1, the same for every non-empty
// tensor), and an element count >= 0 (an empty tensor's pointers are not read). The front end
// guarantees it; a caller that does not gets an error naming the tensor. Returns the number of
// moments (SGD's 0 or 1).
inline int check_update_group(const char* op, const UpdateGroup& group, int moments) {
  int expected = moments;
  if (expected < 0) {  // SGD: with momentum when the first non-empty tensor has a buffer
    expected = 0;
    for (const UpdateTensors& t : group.tensors) {
      if (t.elements == 0) continue;
      expected = t.first_moment != nullptr ? 1 : 0;
      break;
    }
  }
  for (std::size_t i = 0; i < group.tensors.size(); ++i) {
    const UpdateTensors& t = group.tensors[i];
    const int present = (t.first_moment != nullptr ? 1 : 0) + (t.second_moment != nullptr ? 1 : 0);
    if (t.elements < 0 || (t.elements > 0 && (t.weight == nullptr || t.grad == nullptr)) ||
        (t.elements > 0 && present != expected) || (expected == 1 && t.second_moment != nullptr)) {
      throw Error(std::string("tandem: ") + op + ": tensor " + std::to_string(i) + " of " +
                  std::to_string(group.tensors.size()) + " is malformed (" +
                  std::to_string(t.elements) + " elements, " + std::to_string(present) +
                  " state arrays where the group has " + std::to_string(expected) + ")");
    }
  }
  return expected;
}

}  // namespace tandem::ops
