// Helpers for data parallelism over several devices, as in the seeds' multi-GPU chapters.
//
//   std::vector<tandem::Device> devices{tandem::sim(0), tandem::sim(1)};
//   auto parts = nd::split_and_load(batch, devices);   // part i on devices[i], copies queued
//   std::vector<nd::NDArray> grads;
//   for (auto& part : parts) grads.push_back(nd::dot(part.T(), part));   // side by side
//   nd::allreduce(grads);                               // every grads[i] now holds the sum
//
// Both return at once: the copies go to the devices' copy queues (H2D for a host batch, the
// peer-copy stream between accelerators) and overlap the compute queued around them.
#pragma once

#include <vector>

#include "tandem/device.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd {

// Splits `batch` along its first axis into devices.size() consecutive parts and copies part i
// to devices[i] (as_in_context: a part already on its device is a view, not a copy). With
// `even_split` the first dimension must be a multiple of the device count (tandem::Error naming
// the shape and the count otherwise); without it, the first (rows % count) parts get one row
// more. Throws tandem::Error for an empty device list, a 0-d batch, or fewer rows than devices.
std::vector<NDArray> split_and_load(const NDArray& batch, const std::vector<Device>& devices,
                                    bool even_split = true);

// Sums `arrays` (one per device, of one shape and dtype) and writes the sum into every one of
// them. The sum is formed on arrays[0]'s device (each other array copied there on its copy
// queue, then added in order, so every device receives bit-identical values) and copied back.
// Throws tandem::Error at the call for an empty list, differing shapes or dtypes, or two
// devices with no copy path between them; writes into each array like any in-place op.
void allreduce(const std::vector<NDArray>& arrays);

}  // namespace tandem::nd
