#include "tandem/device.h"

#include "tandem/engine_config.h"
#include "tandem/op_props.h"

namespace tandem {

const char* kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu:
      return "cpu";
    case DeviceKind::cuda:
      return "gpu";
    case DeviceKind::sim:
      return "sim";
  }
  return "unknown";
}

std::string to_string(Device device) {
  return std::string(kind_name(device.kind)) + "(" + std::to_string(device.id) + ")";
}

std::ostream& operator<<(std::ostream& out, Device device) {
  return out << to_string(device);
}

const char* queue_name(Queue queue) {
  switch (queue) {
    case Queue::compute:
      return "compute";
    case Queue::copy_h2d:
      return "copy_h2d";
    case Queue::copy_d2h:
      return "copy_d2h";
    case Queue::copy_d2d:
      return "copy_d2d";
    case Queue::comm:
      return "comm";
  }
  return "unknown";
}

const char* engine_kind_name(EngineKind kind) {
  return kind == EngineKind::naive ? "naive" : "threaded";
}

}  // namespace tandem
