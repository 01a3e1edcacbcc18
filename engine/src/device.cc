#include "tandem/device.h"

#include <charconv>
#include <string>

#include "tandem/accel/backend.h"
#include "tandem/engine_config.h"
#include "tandem/errors.h"
#include "tandem/op_props.h"

namespace tandem {

const char* kind_name(DeviceKind kind) {
  if (kind == DeviceKind::cpu) return "cpu";
  return backend(kind).name.c_str();  // rows live until exit
}

std::string to_string(Device device) {
  std::string text = kind_name(device.kind);
  text += '(';
  text += std::to_string(device.id);
  text += ')';
  return text;
}

Device parse_device(std::string_view text) {
  const auto bad = [&](const char* why) {
    std::string message = "tandem: '";
    message += text;
    message += "' is not a device: ";
    message += why;
    message += " (the kinds are cpu";
    for (DeviceKind kind : accelerator_kinds()) {
      message += ", ";
      message += kind_name(kind);
    }
    message += "; a device reads like sim(0))";
    return Error(message);
  };
  const std::size_t open = text.find('(');
  const std::string_view name = text.substr(0, open);
  int id = 0;
  if (open != std::string_view::npos) {
    const std::string_view digits = text.substr(open + 1);
    if (digits.size() < 2 || digits.back() != ')') throw bad("expected name(id)");
    const std::string_view number = digits.substr(0, digits.size() - 1);
    const auto [end, status] = std::from_chars(number.data(), number.data() + number.size(), id);
    if (status != std::errc() || end != number.data() + number.size() || id < 0) {
      throw bad("the id is not a number >= 0");
    }
  }
  if (name == "cpu") return cpu(id);
  if (const Backend* row = find_backend(name)) return Device{row->kind, id};
  throw bad("no backend has that name");
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
