// Optimizer updates in place on a gpu(i), the gpu(i) form of ops/src/cpu/optimizer_update.cc
// (same operations per element, so the same bits: ops/ is compiled without FMA contraction):
// one grid-stride kernel per update, and for a grouped update (update_group.h) one launch per
// table of common/update_group_plan.h, a block per chunk (as PyTorch's multi_tensor_apply runs
// its fused optimizers). `stream` must be a gpu(i) compute stream.
#include <cstdint>
#include <vector>

#include "common/floating_checks.h"
#include "common/optimizer_step.h"
#include "common/update_group_plan.h"
#include "kernel_declarations.h"
#include "launch.cuh"

namespace tandem::ops::cuda {

namespace {

template <class T>
__global__ void sgd_kernel(T* w, const T* g, T* m, std::int64_t n, SgdElement<T> element) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    if (m == nullptr) {
      element(w[i], g[i]);
    } else {
      element(w[i], g[i], m[i]);
    }
  }
}

template <class T>
__global__ void adam_kernel(T* w, const T* g, T* mean, T* var, std::int64_t n,
                            AdamElement<T> element) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    element(w[i], g[i], mean[i], var[i]);
  }
}

// One launch's share of a grouped update, passed by value as the kernel's argument (within
// the 4 KiB a kernel argument list may take): the table's tensors, and for each block the
// tensor (an index into the table) and the chunk of it the block updates.
template <class T>
struct UpdateTable {
  T* weight[kUpdateTableTensors];
  const T* grad[kUpdateTableTensors];
  T* first_moment[kUpdateTableTensors];
  T* second_moment[kUpdateTableTensors];
  std::int64_t elements[kUpdateTableTensors];
  std::uint8_t block_tensor[kUpdateTableChunks];
  std::int32_t block_chunk[kUpdateTableChunks];  // the chunk's begin / kUpdateChunk
};
static_assert(sizeof(UpdateTable<double>) + 64 <= 4096,
              "a launch table must fit a kernel's argument list");
static_assert(kUpdateTableTensors <= 256, "block_tensor is a byte");

template <class T, class Element, int Moments>
__global__ void update_group_kernel(UpdateTable<T> table, Element element) {
  const int t = table.block_tensor[blockIdx.x];
  const std::int64_t begin =
      static_cast<std::int64_t>(table.block_chunk[blockIdx.x]) * kUpdateChunk;
  const std::int64_t end = min(begin + kUpdateChunk, table.elements[t]);
  T* w = table.weight[t];
  const T* g = table.grad[t];
  if constexpr (Moments == 0) {
    for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) element(w[i], g[i]);
  } else if constexpr (Moments == 1) {
    T* m = table.first_moment[t];
    for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) element(w[i], g[i], m[i]);
  } else {
    T* mean = table.first_moment[t];
    T* var = table.second_moment[t];
    for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      element(w[i], g[i], mean[i], var[i]);
    }
  }
}

// Launches update_group_kernel once per table of the group's plan.
template <class T, int Moments, class Element>
void launch_update_group(const Launch& launch, const UpdateGroup& group, const Element& element) {
  const std::vector<UpdateChunk> chunks = update_chunks(group);
  for_each_update_table(chunks, [&](std::size_t first, std::size_t last) {
    UpdateTable<T> table{};
    int slot = -1;
    int previous = -1;
    for (std::size_t c = first; c < last; ++c) {
      const UpdateChunk& chunk = chunks[c];
      if (chunk.tensor != previous) {
        const UpdateTensors& tensor = group.tensors[static_cast<std::size_t>(chunk.tensor)];
        ++slot;
        table.weight[slot] = static_cast<T*>(tensor.weight);
        table.grad[slot] = static_cast<const T*>(tensor.grad);
        table.first_moment[slot] = static_cast<T*>(tensor.first_moment);
        table.second_moment[slot] = static_cast<T*>(tensor.second_moment);
        table.elements[slot] = tensor.elements;
        previous = chunk.tensor;
      }
      table.block_tensor[c - first] = static_cast<std::uint8_t>(slot);
      table.block_chunk[c - first] = static_cast<std::int32_t>(chunk.begin / kUpdateChunk);
    }
    update_group_kernel<T, Element, Moments>
        <<<static_cast<unsigned>(last - first), kThreads, 0, launch.stream()>>>(table, element);
    launch.launched();
  });
}

}  // namespace

void sgd_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& momentum_buffer,
                double grad_scale, double decay, double momentum, tandem::Stream& stream) {
  const char* op = "sgd_update";
  const std::int64_t n = update_elements(op, weight, {&grad, &momentum_buffer});
  if (n == 0) return;
  Launch launch(stream, op);
  dispatch_floating(weight.dtype, op, [&]<class T>(T) {
    T* m = momentum_buffer.data != nullptr ? momentum_buffer.typed<T>() : nullptr;
    sgd_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
        weight.typed<T>(), grad.typed<const T>(), m, n, SgdElement<T>(grad_scale, decay, momentum));
    launch.launched();
  });
}

void adam_update(const ArrayView& weight, const ArrayView& grad, const ArrayView& mean,
                 const ArrayView& var, const AdamStep& step, tandem::Stream& stream) {
  const char* op = "adam_update";
  const std::int64_t n = update_elements(op, weight, {&grad, &mean, &var});
  if (n == 0) return;
  Launch launch(stream, op);
  dispatch_floating(weight.dtype, op, [&]<class T>(T) {
    adam_kernel<T><<<grid_for(n), kThreads, 0, launch.stream()>>>(
        weight.typed<T>(), grad.typed<const T>(), mean.typed<T>(), var.typed<T>(), n,
        AdamElement<T>(step));
    launch.launched();
  });
}

void sgd_update_group(const UpdateGroup& group, double grad_scale, double decay, double momentum,
                      tandem::Stream& stream) {
  const char* op = "multi_sgd_update";
  const int moments = check_update_group(op, group, -1);
  if (group.elements() == 0) return;
  Launch launch(stream, op);
  dispatch_floating(group.dtype, op, [&]<class T>(T) {
    const SgdElement<T> element(grad_scale, decay, momentum);
    if (moments == 0) {
      launch_update_group<T, 0>(launch, group, element);
    } else {
      launch_update_group<T, 1>(launch, group, element);
    }
  });
}

void adam_update_group(const UpdateGroup& group, const AdamStep& step, tandem::Stream& stream) {
  const char* op = "multi_adam_update";
  check_update_group(op, group, 2);
  if (group.elements() == 0) return;
  Launch launch(stream, op);
  dispatch_floating(group.dtype, op, [&]<class T>(T) {
    launch_update_group<T, 2>(launch, group, AdamElement<T>(step));
  });
}

}  // namespace tandem::ops::cuda
