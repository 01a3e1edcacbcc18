// Optimizer updates in place on the CPU (kernels.h's sgd_update and adam_update rows say what
// they compute): one pass over dense views of one shape and floating dtype, in parallel blocks;
// every element is computed with the operations of the unfused element-wise ops, in their order
// and dtype, so the bits are those of nn::SGD's and nn::Adam's op-by-op updates.

#include <cstdint>
#include <vector>

#include "common/floating_checks.h"
#include "common/optimizer_step.h"
#include "common/update_group_plan.h"
#include "kernel_declarations.h"
#include "parallel.h"

namespace tandem::ops::cpu {

void sgd_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& momentum_buffer,
                double grad_scale, double decay, double momentum) {
  const char* op = "sgd_update";
  const std::int64_t n = update_elements(op, weight, {&grad, &momentum_buffer});
  dispatch_floating(weight.dtype, op, [&]<class T>(T) {
    const SgdElement<T> element(grad_scale, decay, momentum);
    T* w = weight.typed<T>();
    const T* g = grad.typed<const T>();
    T* m = momentum_buffer.data != nullptr ? momentum_buffer.typed<T>() : nullptr;
    parallel_blocks(n, kElementwiseBlock, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      if (m == nullptr) {
        for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i]);
      } else {
        for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i], m[i]);
      }
    });
  });
}

void adam_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& mean,
                 const ArrayView& var, const AdamStep& step) {
  const char* op = "adam_update";
  const std::int64_t n = update_elements(op, weight, {&grad, &mean, &var});
  dispatch_floating(weight.dtype, op, [&]<class T>(T) {
    const AdamElement<T> element(step);
    T* w = weight.typed<T>();
    const T* g = grad.typed<const T>();
    T* m = mean.typed<T>();
    T* v = var.typed<T>();
    parallel_blocks(n, kElementwiseBlock, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i], m[i], v[i]);
    });
  });
}

namespace {

// Runs body(tensor, begin, end) over every chunk of the group (update_group_plan.h): serially when
// the whole group is one block's work, else the chunks as parallel blocks.
template <class Body>
void for_each_chunk(const UpdateGroup& group, Body&& body) {
  const std::vector<UpdateChunk> chunks = update_chunks(group);
  if (group.elements() <= kElementwiseBlock) {
    for (const UpdateChunk& c : chunks) body(group.tensors[c.tensor], c.begin, c.end);
    return;
  }
  parallel_blocks(static_cast<std::int64_t>(chunks.size()), 1,
                  [&](std::int64_t i, std::int64_t, std::int64_t) {
                    const UpdateChunk& c = chunks[static_cast<std::size_t>(i)];
                    body(group.tensors[c.tensor], c.begin, c.end);
                  });
}

}  // namespace

void sgd_update_group(const UpdateGroup& group, double grad_scale, double decay, double momentum) {
  const char* op = "multi_sgd_update";
  const bool has_momentum = check_update_group(op, group, -1) == 1;
  dispatch_floating(group.dtype, op, [&]<class T>(T) {
    const SgdElement<T> element(grad_scale, decay, momentum);
    for_each_chunk(group, [&](const UpdateTensors& t, std::int64_t begin, std::int64_t end) {
      T* w = static_cast<T*>(t.weight);
      const T* g = static_cast<const T*>(t.grad);
      if (!has_momentum) {
        for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i]);
      } else {
        T* m = static_cast<T*>(t.first_moment);
        for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i], m[i]);
      }
    });
  });
}

void adam_update_group(const UpdateGroup& group, const AdamStep& step) {
  const char* op = "multi_adam_update";
  check_update_group(op, group, 2);
  dispatch_floating(group.dtype, op, [&]<class T>(T) {
    const AdamElement<T> element(step);
    for_each_chunk(group, [&](const UpdateTensors& t, std::int64_t begin, std::int64_t end) {
      T* w = static_cast<T*>(t.weight);
      const T* g = static_cast<const T*>(t.grad);
      T* m = static_cast<T*>(t.first_moment);
      T* v = static_cast<T*>(t.second_moment);
      for (std::int64_t i = begin; i < end; ++i) element(w[i], g[i], m[i], v[i]);
    });
  });
}

}  // namespace tandem::ops::cpu
