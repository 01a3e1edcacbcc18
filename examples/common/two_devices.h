// The two devices of the two-device examples (model_parallel, pipeline_parallel): read from
// `--devices A,B`, and checked to exist in this process before anything runs on them.
#pragma once

#include <tandem/tandem.h>

#include <cstdio>
#include <string>
#include <vector>

namespace tandem::examples {

// Reads "A,B" (each as parse_device reads a device, e.g. "sim(0),sim(1)") into `devices`; false
// when there is no comma.
inline bool parse_device_pair(const std::string& list, std::vector<Device>& devices) {
  const std::size_t comma = list.find(',');
  if (comma == std::string::npos) return false;
  devices = {parse_device(list.substr(0, comma)), parse_device(list.substr(comma + 1))};
  return true;
}

inline bool device_present(Device device) {
  return device.kind == DeviceKind::cpu || device.id < device_count(device.kind);
}

// True when both devices exist; otherwise prints why the example is SKIPPED and returns false.
inline bool both_devices_present(Device first, Device second) {
  if (device_present(first) && device_present(second)) return true;
  std::printf("SKIPPED: needs two devices, %s and %s (device_count(sim) = %d)\n",
              to_string(first).c_str(), to_string(second).c_str(), device_count(DeviceKind::sim));
  return false;
}

}  // namespace tandem::examples
