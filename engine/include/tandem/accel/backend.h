// Backend: one row per accelerator kind. The engine knows its accelerators only through these
// rows: how a kind prints and parses, how many devices it has, and how to create one.
//
//   tandem::Backend row;
//   row.name = "null";                                        // prints as null(0)
//   row.device_count = [](const tandem::AcceleratorConfig&) { return 2; };
//   row.create = [](tandem::Device d, const tandem::AcceleratorConfig& c) { return make(d, c); };
//   tandem::DeviceKind kind = tandem::register_backend(std::move(row));
//   tandem::Device d{kind, 0};                                // usable like sim(0)
//
// The built-in rows (sim, and gpu when the build has CUDA) are registered before any lookup;
// each lives in its backend's folder (engine/src/accel/sim/, engine/src/accel/cuda/). A kind
// that no row names is an error everywhere (printing, parsing, counting, pushing), never a
// default. Rows are never removed: a registered backend lives until the process exits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/device.h"
#include "tandem/engine_config.h"

namespace tandem {

class Accelerator;

struct Backend {
  // Set by the registry: the kind this row answers for.
  DeviceKind kind = DeviceKind::cpu;
  // How devices of this kind print and parse: "gpu" prints gpu(1). Letters, digits and '_'.
  std::string name;
  // How many devices of this kind exist under `config` (0 when none, never negative). Called
  // under the registry's lock; it must not call back into the registry.
  std::function<int(const AcceleratorConfig& config)> device_count;
  // Creates `device` (of this kind, 0 <= id < device_count(config)); called once per device, on
  // first use, under the registry's lock (it must not call back into the registry).
  std::function<std::unique_ptr<Accelerator>(Device device, const AcceleratorConfig& config)>
      create;
  // Appended to the error for a device that does not exist: how to get more of them, e.g.
  // "(set TANDEM_SIM_DEVICES or AcceleratorConfig::sim_devices for more)".
  std::string more_devices_hint;
  // Why this kind has no device at all, and what to do about it, for the front end's error on
  // an op for such a device: "<no_devices_reason> (device_count(gpu) == 0; <no_devices_fix>)",
  // e.g. "no sim devices are configured" and "set TANDEM_SIM_DEVICES or ...". Left empty, the
  // error names the count alone.
  std::string no_devices_reason;
  std::string no_devices_fix;
};

// Registers an accelerator kind made at run time (a test backend, a plug-in) and returns the
// kind it was given. Throws tandem::Error if `backend.name` is empty, malformed or taken, if a
// function is missing, or if every kind is in use.
DeviceKind register_backend(Backend backend);
// The row of `kind`. Throws tandem::Error for the cpu (not an accelerator) and for a kind that
// no row names.
const Backend& backend(DeviceKind kind);
// The row named `name` ("gpu", "sim"), or nullptr.
const Backend* find_backend(std::string_view name);
// Every registered accelerator kind, in registration order (the built-in ones first).
std::vector<DeviceKind> accelerator_kinds();

}  // namespace tandem
