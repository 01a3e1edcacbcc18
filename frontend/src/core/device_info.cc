#include "tandem/device_info.h"

#include <fstream>
#include <thread>

#include "core/backend.h"
#include "tandem/accel/accelerator.h"
#include "tandem/errors.h"

namespace tandem {

namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

}  // namespace

int device_count(DeviceKind kind) {
  // The accelerator registry knows the sim configuration and the CUDA runtime's count.
  return kind == DeviceKind::cpu ? 1 : accelerator_count(kind);
}

bool device_available(Device device) {
  return device.id >= 0 && device.id < device_count(device.kind);
}

std::string device_name(Device device) {
  nd::detail::require_backend(device, "device_name");
  if (device.is_accelerator()) return accelerator(device).description();
  static const std::string name =
      cpu_model() + ", " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
      " threads";
  return to_string(device) + ": " + name;
}
}  // namespace tandem
