#include "backend.h"

#include <string>

#include "tandem/device_info.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

void require_backend(Device device, const char* op) {
  if (device_available(device)) return;
  const int count = device_count(device.kind);
  std::string why = count == 0 ? std::string("this build has no ") + kind_name(device.kind) +
                                     " backend (device_count(" + kind_name(device.kind) + ") == 0)"
                               : std::string("device_count(") + kind_name(device.kind) +
                                     ") == " + std::to_string(count);
  throw Error(std::string("tandem: ") + op + ": device " + to_string(device) +
              " is not available: " + why + "; use tandem::cpu() or a device that exists");
}

}  // namespace tandem::nd::detail
