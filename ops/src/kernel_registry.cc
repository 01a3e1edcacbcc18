// The kernel tables by device kind. Every op reads its table here, so the read is one atomic
// load from a constant-initialized array (no guard of a function-local static); the built-in
// tables are installed by the first lookup that finds a slot empty. Registering copies the
// table into storage that lives as long as the process, so a pointer an op has read stays valid
// even when its kind's table is replaced.
#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <string>

#include "kernel_tables.h"
#include "tandem/errors.h"
#include "tandem/ops/kernels.h"

namespace tandem::ops {

namespace {

constexpr std::size_t kKinds = 256;  // every value of DeviceKind's std::uint8_t

constinit std::array<std::atomic<const Kernels*>, kKinds> tables{};

std::size_t slot(DeviceKind kind) {
  return static_cast<std::size_t>(kind);
}

// Sets a built-in table unless a backend registered its own for the kind first.
void install(DeviceKind kind, const Kernels& table) {
  const Kernels* empty = nullptr;
  tables[slot(kind)].compare_exchange_strong(empty, &table, std::memory_order_acq_rel);
}

void install_builtins_once() {
  static const bool installed = [] {
    install(DeviceKind::cpu, host_kernels());
    install(DeviceKind::sim, host_stream_kernels());
#ifdef TANDEM_HAVE_CUDA
    install(DeviceKind::cuda, cuda_kernels());
#endif
    return true;
  }();
  (void)installed;
}

// The registered copies; leaked on purpose, like the tables they back (ops that run while the
// process exits still look their tables up). A deque never moves its elements.
struct Registrations {
  std::mutex mutex;
  std::deque<Kernels> owned;
};

Registrations& registrations() {
  static auto* const instance = new Registrations;
  return *instance;
}

const Kernels* find(DeviceKind kind) {
  if (const Kernels* table = tables[slot(kind)].load(std::memory_order_acquire)) return table;
  install_builtins_once();
  return tables[slot(kind)].load(std::memory_order_acquire);
}

// "device kind 'null' (3)"; a kind no backend names has no name (kind_name throws for it).
std::string describe(DeviceKind kind) {
  std::string text = "device kind ";
  try {
    const char* name = kind_name(kind);
    text += "'";
    text += name;
    text += "' ";
  } catch (const Error&) {
    text += "with no backend ";
  }
  text += "(";
  text += std::to_string(static_cast<int>(kind));
  text += ")";
  return text;
}

}  // namespace

const char* missing_kernel(const Kernels& table) {
#define TANDEM_CHECK_FAMILY(Result, family, ...) \
  if (table.family == nullptr) return #family;
  TANDEM_KERNEL_FAMILIES(TANDEM_CHECK_FAMILY)
#undef TANDEM_CHECK_FAMILY
  return nullptr;
}

const Kernels& kernels_for(DeviceKind kind) {
  const Kernels* table = tables[slot(kind)].load(std::memory_order_acquire);
  if (table != nullptr) [[likely]] {
    return *table;
  }
  table = find(kind);
  if (table == nullptr) {
    throw Error("tandem: no kernels are registered for " + describe(kind) +
                "; its backend registers them with tandem::ops::register_kernels(kind, table) "
                "(tandem::ops::host_stream_kernels() when the host can access its memory)");
  }
  return *table;
}

bool has_kernels(DeviceKind kind) {
  return find(kind) != nullptr;
}

void register_kernels(DeviceKind kind, const Kernels& table) {
  if (const char* missing = missing_kernel(table)) {
    throw Error(std::string("tandem: register_kernels: the table for ") + describe(kind) +
                " has no '" + missing + "' kernel; every family must be set");
  }
  install_builtins_once();  // so that they never replace a table registered here
  Registrations& r = registrations();
  const std::lock_guard lock(r.mutex);
  tables[slot(kind)].store(&r.owned.emplace_back(table), std::memory_order_release);
}

}  // namespace tandem::ops
