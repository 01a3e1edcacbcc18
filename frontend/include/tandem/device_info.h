// What devices this process has.
//
//   tandem::device_count(tandem::DeviceKind::cpu)    // 1
//   tandem::device_count(tandem::DeviceKind::cuda)   // 0 in a build or machine without CUDA
//   tandem::device_count(tandem::DeviceKind::sim)    // AcceleratorConfig::sim_devices (2)
//   tandem::device_name(tandem::cpu())               // "cpu(0): AMD EPYC 7B13, 2 threads"
//   tandem::device_name(tandem::sim(0))              // "sim(0): modelled accelerator, ..."
//
// The CPU is one device, cpu(0), whatever the number of cores (the engine's worker pool uses all
// of them). Accelerator counts come from the registry in tandem/accel/accelerator.h: cuda(i) as
// the CUDA runtime reports them (CUDA_VISIBLE_DEVICES applies), sim(i) as configured
// (AcceleratorConfig::sim_devices, see configure_accelerators). Creating or copying an array onto a
// device that does not exist throws tandem::Error naming the device and the count.
#pragma once

#include <string>

#include "tandem/device.h"

namespace tandem {

int device_count(DeviceKind kind);
// True when `device` is present and has a backend in this build.
bool device_available(Device device);
// "cpu(0): <processor model>, <n> threads", or the accelerator's own description. Throws
// tandem::Error for a device not present.
std::string device_name(Device device);

}  // namespace tandem
