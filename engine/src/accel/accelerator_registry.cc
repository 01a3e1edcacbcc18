// The process-wide accelerators and the backend rows they come from: register_backend, backend,
// find_backend, accelerator_count, accelerator(Device), configure_accelerators.
//
// Accelerators are created on first use and live until the process exits (deliberately leaked:
// the process-wide engine is destroyed at exit and finishes its device work on them, so they
// must outlive every static destructor). Backend rows are leaked the same way: kind_name()
// hands out their names. Looking up a row or an existing accelerator takes no lock (acquire
// loads); registration, creation and configuration take the registry's mutex.
#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "accel/builtin_backends.h"
#include "base/device_table.h"
#include "tandem/accel/accelerator.h"
#include "tandem/accel/backend.h"
#include "tandem/errors.h"

namespace tandem {

namespace {

constexpr std::size_t kKinds = detail::DeviceTable<Accelerator>::kKinds;

struct Registry {
  Registry();

  std::mutex mutex;
  std::optional<AcceleratorConfig> config;  // set by configure_accelerators or on first use
  bool created_any = false;                 // guarded by mutex
  // Indexed by kind; a slot is written once, under the mutex, and then only read.
  std::array<std::atomic<const Backend*>, kKinds> rows{};
  std::vector<DeviceKind> order;  // registration order, guarded by mutex
  detail::DeviceTable<Accelerator> devices;
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked on purpose, see above
  return *r;
}

std::string kind_list_locked(const Registry& r) {
  std::string text = "cpu";
  for (DeviceKind kind : r.order) {
    text += ", ";
    text += r.rows[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed)->name;
  }
  return text;
}

// Checks a row and stores it under `kind`. Call with the mutex held (or from the constructor).
void install_locked(Registry& r, Backend row, DeviceKind kind) {
  const bool well_formed = !row.name.empty() && row.name != "cpu" &&
                           std::all_of(row.name.begin(), row.name.end(), [](char c) {
                             return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
                           });
  if (!well_formed) {
    std::string text = "tandem: register_backend: the name '";
    text += row.name;
    text += "' is not usable (letters, digits and '_', not empty, not 'cpu')";
    throw Error(text);
  }
  if (!row.device_count || !row.create) {
    std::string text = "tandem: register_backend: backend '";
    text += row.name;
    text += "' needs both device_count and create";
    throw Error(text);
  }
  for (DeviceKind taken : r.order) {
    if (r.rows[static_cast<std::size_t>(taken)].load(std::memory_order_relaxed)->name == row.name) {
      std::string text = "tandem: register_backend: the name '";
      text += row.name;
      text += "' is taken (registered: ";
      text += kind_list_locked(r);
      text += ")";
      throw Error(text);
    }
  }
  row.kind = kind;
  r.rows[static_cast<std::size_t>(kind)].store(new Backend(std::move(row)),
                                               std::memory_order_release);
  r.order.push_back(kind);
}

Registry::Registry() {
  for (Backend& row : detail::builtin_backends()) install_locked(*this, row, row.kind);
}

// Call with the registry's mutex held.
const AcceleratorConfig& config_locked(Registry& r) {
  // Only the accelerator variables: a bad engine variable is the engine's error, and
  // Engine::set_default(config) gets past it without making every device call fail.
  if (!r.config) r.config = AcceleratorConfig::from_env();
  return *r.config;
}

int count_locked(Registry& r, const Backend& row) {
  const int count = row.device_count(config_locked(r));
  return count < 0 ? 0 : count;
}

std::string no_such_device(Device device, int count, const Backend* row) {
  std::string text = "tandem: there is no accelerator ";
  text += to_string(device);
  text += ": ";
  if (row == nullptr) return text + "cpu(0) is not an accelerator";
  text += "this process has ";
  text += std::to_string(count);
  text += " ";
  text += row->name;
  text += count == 1 ? " device" : " devices";
  if (!row->more_devices_hint.empty()) {
    text += " ";
    text += row->more_devices_hint;
  }
  return text;
}

}  // namespace

DeviceKind register_backend(Backend backend) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (std::size_t kind = 1; kind < kKinds; ++kind) {
    if (r.rows[kind].load(std::memory_order_relaxed) == nullptr) {
      install_locked(r, std::move(backend), static_cast<DeviceKind>(kind));
      return static_cast<DeviceKind>(kind);
    }
  }
  throw Error("tandem: register_backend: every device kind is in use (" +
              std::to_string(kKinds - 1) + " accelerator kinds at most)");
}

const Backend& backend(DeviceKind kind) {
  Registry& r = registry();
  if (const Backend* row = r.rows[static_cast<std::size_t>(kind)].load(std::memory_order_acquire)) {
    return *row;
  }
  std::lock_guard lock(r.mutex);
  std::string text = "tandem: device kind ";
  text += std::to_string(static_cast<int>(kind));
  text += kind == DeviceKind::cpu ? " is the cpu, not an accelerator backend"
                                  : " is not a registered backend";
  text += " (the kinds are ";
  text += kind_list_locked(r);
  text += ")";
  throw Error(text);
}

const Backend* find_backend(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (DeviceKind kind : r.order) {
    const Backend* row = r.rows[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed);
    if (row->name == name) return row;
  }
  return nullptr;
}

std::vector<DeviceKind> accelerator_kinds() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.order;
}

int accelerator_count(DeviceKind kind) {
  if (kind == DeviceKind::cpu) return 1;
  const Backend& row = backend(kind);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return count_locked(r, row);
}

Accelerator& accelerator(Device device) {
  Registry& r = registry();
  if (Accelerator* a = r.devices.find(device)) return *a;
  if (device.kind == DeviceKind::cpu) throw Error(no_such_device(device, 0, nullptr));
  const Backend& row = backend(device.kind);
  std::lock_guard lock(r.mutex);
  const int count = count_locked(r, row);
  if (device.id < 0 || device.id >= count || !r.devices.fits(device)) {
    throw Error(no_such_device(device, count, &row));
  }
  if (Accelerator* a = r.devices.find(device)) return *a;
  std::unique_ptr<Accelerator> created = row.create(device, config_locked(r));
  if (created == nullptr || created->device() != device) {
    std::string text = "tandem: backend '";
    text += row.name;
    text += "' did not create ";
    text += to_string(device);
    throw Error(text);
  }
  r.created_any = true;
  Accelerator* a = created.release();  // lives until exit, see above
  r.devices.insert(device, count, a);
  return *a;
}

void configure_accelerators(const AcceleratorConfig& config) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.created_any) {
    throw Error(
        "tandem: configure_accelerators called after an accelerator was created; configure "
        "them before the first use of an accelerator (or set the TANDEM_SIM_* variables)");
  }
  r.config = config;
}

}  // namespace tandem

namespace tandem {

MemoryPool& pinned_host_pool() {
  if (accelerator_count(DeviceKind::cuda) > 0) return accelerator(tandem::cuda(0)).pinned_pool();
  if (accelerator_count(DeviceKind::sim) > 0) return accelerator(sim(0)).pinned_pool();
  throw Error(
      "tandem: pinned host memory needs an accelerator, and this process has none (no CUDA "
      "device, and no sim device: TANDEM_SIM_DEVICES=0); pinned memory only speeds up copies to "
      "an accelerator, so use pageable memory here");
}

}  // namespace tandem
