#include "core/backend.h"

#include <string>

#include "tandem/accel/backend.h"
#include "tandem/device_info.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

namespace {

// Why `kind` has no device at all: a backend missing from the build, or one that is built and
// finds nothing to run on. The two need different fixes (rebuild vs. driver, visible devices),
// and the backend's row says which applies and what to do.
std::string why_none(DeviceKind kind) {
  const std::string count = std::string("device_count(") + kind_name(kind) + ") == 0";
  if (kind == DeviceKind::cpu) return count;
  const Backend& row = backend(kind);
  if (row.no_devices_reason.empty()) return count;
  std::string text = row.no_devices_reason + " (" + count;
  if (!row.no_devices_fix.empty()) text += "; " + row.no_devices_fix;
  return text + ")";
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
