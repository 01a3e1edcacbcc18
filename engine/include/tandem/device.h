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
#include <string_view>

namespace tandem {

// The kinds an engine knows: the cpu, and each accelerator backend registered in
// tandem/accel/backend.h. `cuda` and `sim` are the built-in backends; a backend registered at run
// time (register_backend) gets another value of the underlying type, so the enumerators below
// are not the full list. A kind that no backend row names is an error wherever it is used.
enum class DeviceKind : std::uint8_t { cpu = 0, cuda = 1, sim = 2 };

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

// "cpu", "gpu", "sim", or the name of a backend registered at run time: the spelling MXNet users
// know ("gpu") is kept for CUDA devices. Throws tandem::Error for a kind no backend names.
const char* kind_name(DeviceKind kind);
// "cpu(0)", "gpu(1)", "sim(0)". Throws like kind_name.
std::string to_string(Device device);
// The inverse of to_string: "gpu(1)" is cuda(1); a bare name ("sim") is device 0. Only the
// spelling is checked, not whether the device exists (accelerator(device) does that). Throws
// tandem::Error naming the text and the known kinds when it is not a device.
Device parse_device(std::string_view text);
std::ostream& operator<<(std::ostream& out, Device device);

}  // namespace tandem

template <>
struct std::hash<tandem::Device> {
  std::size_t operator()(tandem::Device d) const noexcept {
    return (static_cast<std::size_t>(d.kind) << 16) ^ static_cast<std::size_t>(d.id);
  }
};
