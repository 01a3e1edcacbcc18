// Device: where an op runs and where an array's memory lives.
//
//   tandem::Device d = tandem::cpu();        // prints as cpu(0)
//   tandem::Device g = tandem::cuda(1);      // prints as gpu(1), like MXNet's contexts
//   tandem::Device s = tandem::sim(0);       // the simulated accelerator, prints as sim(0)
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace tandem {

enum class DeviceKind : std::uint8_t { cpu, cuda, sim };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int id = 0;

  friend constexpr bool operator==(const Device&, const Device&) = default;
  bool is_accelerator() const { return kind != DeviceKind::cpu; }
};

constexpr Device cpu(int id = 0) {
  return Device{DeviceKind::cpu, id};
}
constexpr Device cuda(int id = 0) {
  return Device{DeviceKind::cuda, id};
}
constexpr Device sim(int id = 0) {
  return Device{DeviceKind::sim, id};
}

// "cpu", "gpu" or "sim": the spelling MXNet users know ("gpu") is kept for CUDA devices.
const char* kind_name(DeviceKind kind);
// "cpu(0)", "gpu(1)", "sim(0)".
std::string to_string(Device device);
std::ostream& operator<<(std::ostream& out, Device device);

}  // namespace tandem

template <>
struct std::hash<tandem::Device> {
  std::size_t operator()(tandem::Device d) const noexcept {
    return (static_cast<std::size_t>(d.kind) << 16) ^ static_cast<std::size_t>(d.id);
  }
};
