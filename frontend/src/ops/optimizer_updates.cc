// Optimizer updates in place: checks at the call, then one queued kernel (the sgd_update and
// adam_update families), or the unfused element-wise ops when an operand is strided or overlaps
// another one differently (the fused kernels take dense, disjoint arrays).
#include "tandem/nd/optimizer_updates.h"

#include <initializer_list>
#include <string>

#include "core/checks.h"
#include "core/modes.h"
#include "core/view_op.h"
#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"

namespace tandem::nd {

namespace {

// The arrays must match the weight: place, dtype (floating), shape.
void check_update(const char* op, const NDArray& weight,
                  std::initializer_list<const NDArray*> others) {
  detail::check_defined(op, weight);
  detail::check_floating(op, weight.dtype());
  for (const NDArray* other : others) {
    detail::check_same_place(op, {&weight, other});
    detail::check_same_dtype(op, weight, *other);
    if (!(other->shape() == weight.shape())) {
      throw Error(std::string("tandem: ") + op + ": every array must have the weight's shape " +
                  weight.shape().to_string() + ", got " + other->shape().to_string());
    }
  }
}

// Whether the fused kernel can take these arrays: all dense, and no two sharing memory
// unless they are the very same view (then each element is read before it is written).
bool fusable(std::initializer_list<const NDArray*> arrays) {
  for (const NDArray* a : arrays) {
    if (!a->is_contiguous()) return false;
    for (const NDArray* b : arrays) {
      if (a != b && detail::overlaps_differently(*a, *b)) return false;
    }
  }
  return true;
}

}  // namespace

void sgd_update(NDArray& weight, const NDArray& grad, const SgdUpdateOptions& options) {
  const char* op = "sgd_update";
  check_update(op, weight, {&grad});
  const double grad_scale = options.learning_rate * options.rescale_grad;
  const double decay = options.learning_rate * options.wd;
  if (!fusable({&weight, &grad})) {
    if (decay != 0.0) weight *= 1.0 - decay;
    weight -= grad * grad_scale;
    return;
  }
  detail::note_in_place_write(op, weight, &grad);
  detail::push_view_op<3>(weight.engine(), weight.device(), op,
                          {detail::lazy_view(weight), detail::lazy_view(grad), detail::LazyView{}},
                          {grad.var()}, {weight.var()},
                          [grad_scale, decay](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.sgd_update(s, v[0], v[1], v[2], grad_scale, decay, 0.0);
                          });
}

void sgd_mom_update(NDArray& weight, const NDArray& grad, NDArray& momentum,
                    const SgdUpdateOptions& options) {
  const char* op = "sgd_mom_update";
  check_update(op, weight, {&grad, &momentum});
  const double grad_scale = options.learning_rate * options.rescale_grad;
  const double decay = options.learning_rate * options.wd;
  if (!fusable({&weight, &grad, &momentum})) {
    momentum *= options.momentum;
    momentum -= grad * grad_scale;
    if (decay != 0.0) momentum -= weight * decay;
    weight += momentum;
    return;
  }
  detail::note_in_place_write(op, momentum, &grad);
  detail::note_in_place_write(op, weight, &momentum);
  const double rate = options.momentum;
  detail::push_view_op<3>(
      weight.engine(), weight.device(), op,
      {detail::lazy_view(weight), detail::lazy_view(grad), detail::lazy_view(momentum)},
      {grad.var()}, {weight.var(), momentum.var()},
      [grad_scale, decay, rate](const ops::Kernels& k, Stream* s, const auto& v) {
        k.sgd_update(s, v[0], v[1], v[2], grad_scale, decay, rate);
      });
}

void adam_update(NDArray& weight, const NDArray& grad, NDArray& mean, NDArray& var,
                 const AdamUpdateOptions& options) {
  const char* op = "adam_update";
  check_update(op, weight, {&grad, &mean, &var});
  if (!fusable({&weight, &grad, &mean, &var})) {
    NDArray g = options.rescale_grad == 1.0 ? grad : grad * options.rescale_grad;
    if (options.wd != 0.0) g = g + weight * options.wd;
    mean *= options.beta1;
    mean += g * (1.0 - options.beta1);
    var *= options.beta2;
    var += nd::square(g) * (1.0 - options.beta2);
    weight -= mean / (nd::sqrt(var) + options.epsilon) * options.learning_rate;
    return;
  }
  detail::note_in_place_write(op, mean, &grad);
  detail::note_in_place_write(op, var, &grad);
  detail::note_in_place_write(op, weight, &mean);
  const ops::AdamStep step{.rescale = options.rescale_grad,
                           .wd = options.wd,
                           .beta1 = options.beta1,
                           .beta2 = options.beta2,
                           .epsilon = options.epsilon,
                           .step_size = options.learning_rate};
  detail::push_view_op<4>(weight.engine(), weight.device(), op,
                          {detail::lazy_view(weight), detail::lazy_view(grad),
                           detail::lazy_view(mean), detail::lazy_view(var)},
                          {grad.var()}, {weight.var(), mean.var(), var.var()},
                          [step](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.adam_update(s, v[0], v[1], v[2], v[3], step);
                          });
}

}  // namespace tandem::nd
