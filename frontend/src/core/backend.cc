#include "core/backend.h"

#include <string>

#include "tandem/device_info.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

namespace {

// Why `kind` has no device at all: a backend missing from the build, or one that is built and
// finds nothing to run on. The two need different fixes (rebuild vs. driver, visible devices).
std::string why_none(DeviceKind kind) {
  const std::string count = std::string("device_count(") + kind_name(kind) + ") == 0";
  switch (kind) {
    case DeviceKind::cuda:
#ifdef TANDEM_HAVE_CUDA
      return "the gpu backend is built, but the CUDA runtime found no device or no driver (" +
             count +
             "; check the NVIDIA driver and CUDA_VISIBLE_DEVICES, TANDEM_LOG_LEVEL=info logs "
             "cudaGetDeviceCount's answer)";
#else
      return "this build has no gpu backend (" + count + "; configure with -DTANDEM_CUDA=ON)";
#endif
    case DeviceKind::sim:
      return "no sim devices are configured (" + count +
             "; set TANDEM_SIM_DEVICES or AcceleratorConfig::sim_devices)";
    case DeviceKind::cpu:
      break;
  }
  return count;
}

}  // namespace

void require_backend(Device device, const char* op) {
  if (device_available(device)) return;
  const int count = device_count(device.kind);
  const std::string why = count == 0 ? why_none(device.kind)
                                     : std::string("device_count(") + kind_name(device.kind) +
                                           ") == " + std::to_string(count);
  throw Error(std::string("tandem: ") + op + ": device " + to_string(device) +
              " is not available: " + why + "; use tandem::cpu() or a device that exists");
}

}  // namespace tandem::nd::detail
