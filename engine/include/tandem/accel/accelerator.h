// Accelerator: one accelerator device (`cuda(i)`, `sim(i)`, or one of a backend registered at run
// time, see tandem/accel/backend.h): its streams, its memory and its model.
//
//   tandem::Accelerator& gpu = tandem::accelerator(tandem::sim(0));
//   tandem::Stream& h2d = gpu.stream(tandem::Queue::copy_h2d);
//
// Accelerators are process-wide (like CUDA devices) and live until exit; engines create their
// accelerator workers on them lazily. Per device: `compute_streams()` compute streams, one
// stream per copy direction (copy_h2d, copy_d2h), one peer-copy stream (copy_d2d) and one
// `comm` stream.
#pragma once

#include <cstddef>
#include <string>

#include "tandem/accel/memory_pool.h"
#include "tandem/accel/stream.h"
#include "tandem/device.h"
#include "tandem/engine_config.h"

namespace tandem {

class Accelerator {
 public:
  virtual ~Accelerator() = default;

  virtual Device device() const = 0;
  // "sim(0): modelled accelerator, 4 TFLOP/s, 16 GB/s bus" / "gpu(0): NVIDIA H100 80GB HBM3".
  virtual std::string description() const = 0;
  virtual int compute_streams() const = 0;
  // The stream of `queue`; `index` picks among compute streams (taken modulo their count).
  virtual Stream& stream(Queue queue, int index = 0) = 0;

  // Caching pools: device memory (the block a kernel reads and writes) and pinned host memory
  // (the staging buffers of async copies, pinned host arrays). Blocks go back with
  // `pool.free(...)`.
  virtual MemoryPool& device_pool() = 0;
  virtual MemoryPool& pinned_pool() = 0;

  // The stream beside the copy stream of `direction` (copy_h2d or copy_d2h) that runs the host
  // side of a staged copy of pageable memory: the memcpy of one chunk into a pinned buffer runs
  // there while the copy stream moves the previous chunk over the bus (double buffering; events
  // order the two streams). No op runs on it. The default, for backends with no such stream,
  // is the copy stream itself: the chunks are then staged one after the other, still correct.
  virtual Stream& staging_stream(Queue direction) { return stream(direction); }

  // Bytes of device memory (sim: the modelled capacity).
  virtual std::size_t memory_capacity() const = 0;
  // Blocks until all work on all its streams has finished; throws the first error.
  virtual void synchronize() = 0;

  // Makes this device the calling thread's current device, so that work the thread launches
  // outside tandem's Stream calls (a user kernel on cuda_stream(stream), a cuBLAS call on
  // cublas_handle(stream)) goes to this device. cuda: cudaSetDevice(i); the CUDA runtime keeps
  // a current device per thread, device 0 by default, and a launch on a stream of another
  // device fails. sim: notes the device for the thread (nothing depends on it). The engine
  // calls it once at the start of each device's launcher thread, and before each launch of the
  // naive engine (which launches on the pushing thread, so that thread's current device stays
  // the op's device afterwards). Throws tandem::Error naming the device if the runtime refuses.
  virtual void bind_thread() = 0;
};

// How many devices of `kind` exist: 1 for cpu; for an accelerator kind, what its backend row
// counts: the CUDA runtime's count for cuda (0 when the build has no CUDA or the machine no GPU
// or driver: cudaGetDeviceCount's error is logged once and counts as 0);
// `AcceleratorConfig::sim_devices` for sim. Throws tandem::Error for a kind no backend names.
int accelerator_count(DeviceKind kind);
// The accelerator behind `device`, created by its backend row on first use. Throws tandem::Error
// naming the device and the count when it does not exist (or is the cpu, or of an unknown kind).
Accelerator& accelerator(Device device);
// The pool of pinned host memory for host arrays (nd's pinned arrays): cuda(0)'s pinned pool
// when a CUDA device exists (cudaHostAlloc with cudaHostAllocPortable: pinned for every gpu),
// else sim(0)'s (plain host memory that sim treats as pinned). Throws tandem::Error when there
// is neither: pinned memory only matters for copies to an accelerator.
MemoryPool& pinned_host_pool();
// Sets the configuration the accelerators are created with. Must come before the first call to
// accelerator(); by default they use AcceleratorConfig::from_env(). Throws tandem::Error if an
// accelerator already exists.
void configure_accelerators(const AcceleratorConfig& config);

}  // namespace tandem
