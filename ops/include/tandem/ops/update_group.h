// The dense tensors of several parameters updated by one kernel call (the sgd_update_group and
// adam_update_group families, kernels.h): what the front end's grouped optimizer updates
// (tandem/nd/optimizer_updates.h) hand a backend. One group has one dtype and one device; each
// entry is one parameter's weight, gradient and optimizer state, all dense, of one element
// count, and no two entries share memory.
#pragma once

#include <cstdint>
#include <vector>

#include "tandem/ops/dtype.h"

namespace tandem::ops {

struct UpdateTensors {
  void* weight = nullptr;
  const void* grad = nullptr;
  // SGD: the momentum buffer (nullptr: none); Adam: the mean.
  void* first_moment = nullptr;
  // Adam: the variance; nullptr for SGD.
  void* second_moment = nullptr;
  std::int64_t elements = 0;
};

struct UpdateGroup {
  DType dtype = DType::float32;
  std::vector<UpdateTensors> tensors;

  std::int64_t elements() const {
    std::int64_t total = 0;
    for (const UpdateTensors& t : tensors) total += t.elements;
    return total;
  }
};

}  // namespace tandem::ops
