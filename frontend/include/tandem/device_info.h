// What devices this process has.
//
//   tandem::device_count(tandem::DeviceKind::cpu)    // 1
//   tandem::device_count(tandem::DeviceKind::cuda)   // 0 in a build or machine without CUDA
//   tandem::device_name(tandem::cpu())               // "cpu(0): AMD EPYC 7B13, 2 threads"
//
// The CPU is one device, cpu(0), whatever the number of cores (the engine's worker pool uses all
// of them). Accelerator backends (cuda, sim) come with their own issue: until then their count
// is 0, and creating or copying an array onto one throws tandem::Error naming the device.
#pragma once

#include <string>

#include "tandem/device.h"

namespace tandem {

int device_count(DeviceKind kind);
// True when `device` is present and has a backend in this build.
bool device_available(Device device);
// "cpu(0): <processor model>, <n> threads". Throws tandem::Error for a device not present.
std::string device_name(Device device);

}  // namespace tandem
