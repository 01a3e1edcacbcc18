// The devices the device-parametrized front-end tests (devices_test.cc) run on.
//
// By default: cpu, the sim devices (at most two) and cuda(0) when there is one. A test program
// that brings its own backend sets `test_accelerators_override()` before the tests run (from a
// static initializer); the tests then run on cpu and those devices only, e.g. cpu and null(0)
// in frontend_null_device_tests.
#pragma once

#include <doctest/doctest.h>

#include <tandem/device_info.h>

#include <algorithm>
#include <vector>

namespace tandem::testing {

inline std::vector<Device>& test_accelerators_override() {
  static std::vector<Device> devices;
  return devices;
}

// cpu first, then the accelerators; a visible line for a skipped cuda(0).
inline std::vector<Device> test_devices() {
  std::vector<Device> devices{cpu()};
  const std::vector<Device>& chosen = test_accelerators_override();
  if (!chosen.empty()) {
    devices.insert(devices.end(), chosen.begin(), chosen.end());
    return devices;
  }
  for (int i = 0; i < std::min(2, device_count(DeviceKind::sim)); ++i) devices.push_back(sim(i));
  if (device_count(DeviceKind::cuda) > 0) {
    devices.push_back(cuda(0));
  } else {
    MESSAGE("SKIPPED cuda(0): no CUDA device");
  }
  return devices;
}

inline std::vector<Device> accelerators() {
  std::vector<Device> devices = test_devices();
  devices.erase(devices.begin());
  return devices;
}

// Whether a device runs the CPU's own kernels (so its results are the cpu's bit for bit): every
// accelerator but cuda, whose reductions and gemm sum in another order.
inline bool runs_cpu_kernels(Device device) {
  return device.kind != DeviceKind::cuda;
}

}  // namespace tandem::testing
