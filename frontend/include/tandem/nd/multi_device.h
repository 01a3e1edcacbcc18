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

#include <cstddef>
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

// The smallest array (in bytes) that AllreduceAlgorithm::automatic sends around the ring: with
// the default sim bus (12 GB/s, 5 us per copy) the ring's D - 1 fewer bytes per link pay for
// its extra copies from about 128 KiB on 4 devices.
inline constexpr std::size_t kRingMinimumBytes = 256 * 1024;

// How allreduce moves the data.
enum class AllreduceAlgorithm {
  // nccl when every array is contiguous and on a gpu device of its own and NCCL is usable
  // (tandem/ops/collectives.h: a build with nccl.h, libnccl.so.2 loadable); otherwise ring for
  // 3 or more contiguous arrays of at least kRingMinimumBytes each, on distinct devices with a
  // copy path from each to the next; gather otherwise (so 2 devices always gather without
  // NCCL). Below that size a copy's fixed cost (launch, copy setup: 5 us on the default sim
  // model) outweighs the bandwidth the ring saves, and the ring pushes 3 D (D - 1) ops where the
  // gather pushes 3 (D - 1).
  automatic,
  // Everything summed on arrays[0]'s device in list order ((a0 + a1) + a2 ...), then copied
  // back: 2 (D - 1) transfers through one device's link.
  gather,
  // Reduce-scatter then all-gather around the ring arrays[0] -> arrays[1] -> ... -> arrays[0]:
  // the arrays are cut into D chunks of (size / D) elements (the first size % D one more; a
  // chunk may be empty); in each of D - 1 steps every device sends one chunk to the next,
  // which adds it into its own (the add on the receiving device), so that device d ends with
  // the full sum of chunk d + 1; in D - 1 more steps the finished chunks are copied around.
  // Every device sends and receives 2 (D - 1) / D of the array, all links busy at once.
  // Chunk c is summed in the order ((a_c + a_c+1) + a_c+2) ...: the same order as gather for
  // chunk 0 only, so ring and gather may differ in the last bits (never between devices:
  // every device receives copies of the same finished chunks).
  ring,
  // One op on arrays[0]'s comm queue that sums in place with NCCL's ncclAllReduce on every
  // device at once (gpu(i) arrays only; NCCL picks its own ring or tree, so the result may
  // differ from gather's in the last bits, never between devices). Throws tandem::Error saying
  // why when NCCL cannot be used (not gpu arrays, a device twice, a strided view, no NCCL in
  // the build or on the machine).
  nccl,
};

// Sums `arrays` (one per device, of one shape and dtype) and writes the sum into every one of
// them; every device ends with bit-identical values. The copies go on the devices' copy queues
// (the peer-copy stream between accelerators), the adds on the receiving device. Throws
// tandem::Error at the call for an empty list, differing shapes or dtypes, two devices with no
// copy path between them, or a forced ring over arrays that are not contiguous or share a
// device; writes into each array like any in-place op.
void allreduce(const std::vector<NDArray>& arrays,
               AllreduceAlgorithm algorithm = AllreduceAlgorithm::automatic);

}  // namespace tandem::nd
