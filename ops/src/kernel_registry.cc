// The kernel tables by device kind. Reads are lock-free (an atomic pointer per kind, read by
// every op); registering copies the table into storage that lives as long as the process, so a
// pointer an op has read stays valid even when its kind's table is replaced.
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

struct Registry {
  std::array<std::atomic<const Kernels*>, kKinds> tables{};
  std::mutex mutex;           // registrations
  std::deque<Kernels> owned;  // the registered copies; a deque never moves its elements
};

std::size_t slot(DeviceKind kind) {
  return static_cast<std::size_t>(kind);
}

// Leaked on purpose: ops that run while the process exits still look their tables up.
Registry& registry() {
  static Registry* const instance = [] {
    auto* r = new Registry;
    r->tables[slot(DeviceKind::cpu)].store(&host_kernels(), std::memory_order_relaxed);
    r->tables[slot(DeviceKind::sim)].store(&host_stream_kernels(), std::memory_order_relaxed);
#ifdef TANDEM_HAVE_CUDA
    r->tables[slot(DeviceKind::cuda)].store(&cuda_kernels(), std::memory_order_relaxed);
#endif
    return r;
  }();
  return *instance;
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
#define TANDEM_CHECK_FAMILY(family) \
  if (table.family == nullptr) return #family;
  TANDEM_CHECK_FAMILY(unary)
  TANDEM_CHECK_FAMILY(binary)
  TANDEM_CHECK_FAMILY(binary_scalar)
  TANDEM_CHECK_FAMILY(unary_dense)
  TANDEM_CHECK_FAMILY(binary_dense)
  TANDEM_CHECK_FAMILY(binary_scalar_dense)
  TANDEM_CHECK_FAMILY(copy)
  TANDEM_CHECK_FAMILY(fill)
  TANDEM_CHECK_FAMILY(arange)
  TANDEM_CHECK_FAMILY(reduce_all)
  TANDEM_CHECK_FAMILY(reduce_axis)
  TANDEM_CHECK_FAMILY(gemm)
  TANDEM_CHECK_FAMILY(random_uniform)
  TANDEM_CHECK_FAMILY(random_normal)
#undef TANDEM_CHECK_FAMILY
  return nullptr;
}

const Kernels& kernels_for(DeviceKind kind) {
  const Kernels* table = registry().tables[slot(kind)].load(std::memory_order_acquire);
  if (table == nullptr) [[unlikely]] {
    throw Error("tandem: no kernels are registered for " + describe(kind) +
                "; its backend registers them with tandem::ops::register_kernels(kind, table) "
                "(tandem::ops::host_stream_kernels() when the host can access its memory)");
  }
  return *table;
}

bool has_kernels(DeviceKind kind) {
  return registry().tables[slot(kind)].load(std::memory_order_acquire) != nullptr;
}

void register_kernels(DeviceKind kind, const Kernels& table) {
  if (const char* missing = missing_kernel(table)) {
    throw Error(std::string("tandem: register_kernels: the table for ") + describe(kind) +
                " has no '" + missing + "' kernel; every family must be set");
  }
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.tables[slot(kind)].store(&r.owned.emplace_back(table), std::memory_order_release);
}

}  // namespace tandem::ops
