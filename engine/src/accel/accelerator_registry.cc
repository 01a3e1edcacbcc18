// The process-wide accelerators: accelerator_count, accelerator(Device), configure_accelerators.
//
// Accelerators are created on first use and live until the process exits (deliberately leaked:
// the process-wide engine is destroyed at exit and finishes its device work on them, so they
// must outlive every static destructor). The lookup of an existing accelerator is one acquire
// load; creation and configuration take the registry's mutex.
#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "accel/cuda_factory.h"
#include "accel/sim_accelerator.h"
#include "tandem/accel/accelerator.h"
#include "tandem/errors.h"

namespace tandem {

namespace {

constexpr int kMaxDevicesPerKind = 64;

struct Registry {
  std::mutex mutex;
  std::optional<AcceleratorConfig> config;  // set by configure_accelerators or on first use
  bool created_any = false;                 // guarded by mutex
  // Indexed [kind][id]; a slot is written once, under the mutex, and then only read.
  std::array<std::array<std::atomic<Accelerator*>, kMaxDevicesPerKind>, 3> devices{};
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked on purpose, see above
  return *r;
}

// Call with the registry's mutex held.
const AcceleratorConfig& config_locked(Registry& r) {
  // Only the accelerator variables: a bad engine variable is the engine's error, and
  // Engine::set_default(config) gets past it without making every device call fail.
  if (!r.config) r.config = AcceleratorConfig::from_env();
  return *r.config;
}

int count_locked(Registry& r, DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu:
      return 1;
    case DeviceKind::sim:
      return std::min(config_locked(r).sim_devices, kMaxDevicesPerKind);
    case DeviceKind::cuda:
#ifdef TANDEM_HAVE_CUDA
      return std::min(detail::cuda_device_count(), kMaxDevicesPerKind);
#else
      return 0;
#endif
  }
  return 0;
}

std::string no_such_device(Device device, int count) {
  std::string text = "tandem: there is no accelerator " + to_string(device) + ": ";
  if (device.kind == DeviceKind::cpu) return text + "cpu(0) is not an accelerator";
  text += "this process has " + std::to_string(count) + " " + kind_name(device.kind) + " device" +
          (count == 1 ? "" : "s");
  if (device.kind == DeviceKind::sim) {
    text += " (set TANDEM_SIM_DEVICES or AcceleratorConfig::sim_devices for more)";
  } else {
#ifdef TANDEM_HAVE_CUDA
    text += " (the CUDA runtime sees no more; check the driver and CUDA_VISIBLE_DEVICES)";
#else
    text += " (this build of tandem has no CUDA support)";
#endif
  }
  return text;
}

}  // namespace

int accelerator_count(DeviceKind kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return count_locked(r, kind);
}

Accelerator& accelerator(Device device) {
  Registry& r = registry();
  const auto kind = static_cast<std::size_t>(device.kind);
  const bool in_range = device.kind != DeviceKind::cpu && kind < r.devices.size() &&
                        device.id >= 0 && device.id < kMaxDevicesPerKind;
  if (in_range) {
    if (Accelerator* a =
            r.devices[kind][static_cast<std::size_t>(device.id)].load(std::memory_order_acquire)) {
      return *a;
    }
  }
  std::lock_guard lock(r.mutex);
  const int count = device.kind == DeviceKind::cpu ? 0 : count_locked(r, device.kind);
  if (!in_range || device.id >= count) throw Error(no_such_device(device, count));
  auto& slot = r.devices[kind][static_cast<std::size_t>(device.id)];
  if (Accelerator* a = slot.load(std::memory_order_relaxed)) return *a;
  std::unique_ptr<Accelerator> created;
  if (device.kind == DeviceKind::sim) {
    created = detail::make_sim_accelerator(device.id, config_locked(r));
  } else {
#ifdef TANDEM_HAVE_CUDA
    created = detail::make_cuda_accelerator(device.id, config_locked(r));
#endif
  }
  r.created_any = true;
  Accelerator* a = created.release();  // lives until exit, see above
  slot.store(a, std::memory_order_release);
  return *a;
}

void configure_accelerators(const AcceleratorConfig& config) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.created_any) {
    throw Error(
        "tandem: configure_accelerators called after an accelerator was created; configure "
        "them before the first use of a sim or cuda device (or set the TANDEM_SIM_* variables)");
  }
  r.config = config;
}

}  // namespace tandem
