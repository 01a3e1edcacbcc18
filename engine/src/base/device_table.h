// DeviceTable<T>: a pointer per device (kind, id), found without a lock, for the tables that the
// hot path reads (the accelerators, a threaded engine's accelerator executors).
//
// Invariants:
// - One row per DeviceKind value (the whole range of its underlying type, so a kind registered
//   at run time has a row like a built-in one), created on the first insert of that kind with
//   the kind's device count at that time; the count of a kind never changes once one of its
//   accelerators exists (configure_accelerators refuses), so the row is never resized.
// - A slot is written once, by insert(), under the owner's mutex, and then only read: find()
//   is an acquire load of the row and one of the slot.
// - The table owns its rows, not the pointers it hands out.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "tandem/device.h"

namespace tandem::detail {

template <class T>
class DeviceTable {
 public:
  static constexpr std::size_t kKinds =
      std::size_t{std::numeric_limits<std::underlying_type_t<DeviceKind>>::max()} + 1;

  DeviceTable() = default;
  DeviceTable(const DeviceTable&) = delete;
  DeviceTable& operator=(const DeviceTable&) = delete;
  ~DeviceTable() {
    for (auto& row : rows_) delete row.load(std::memory_order_relaxed);
  }

  // The pointer stored for `device`, or nullptr. Lock-free.
  T* find(Device device) const noexcept {
    const Row* row = rows_[index(device.kind)].load(std::memory_order_acquire);
    if (row == nullptr || device.id < 0 || device.id >= row->count) return nullptr;
    return row->slots[static_cast<std::size_t>(device.id)].load(std::memory_order_acquire);
  }

  // Stores `value` for `device` (0 <= id < count). `count`: the devices of its kind, used when
  // this is the kind's first insert. Call with the owner's mutex held.
  void insert(Device device, int count, T* value) {
    std::atomic<Row*>& slot = rows_[index(device.kind)];
    Row* row = slot.load(std::memory_order_relaxed);
    if (row == nullptr) {
      row = new Row(count);
      slot.store(row, std::memory_order_release);
    }
    row->slots[static_cast<std::size_t>(device.id)].store(value, std::memory_order_release);
  }

  // Forgets every pointer (the rows stay). Call with the owner's mutex held.
  void clear() noexcept {
    for (auto& slot : rows_) {
      if (Row* row = slot.load(std::memory_order_relaxed)) {
        for (int i = 0; i < row->count; ++i) {
          row->slots[static_cast<std::size_t>(i)].store(nullptr, std::memory_order_relaxed);
        }
      }
    }
  }

  // Whether insert() may store `device`: true when its kind has no row yet or the id fits.
  bool fits(Device device) const noexcept {
    const Row* row = rows_[index(device.kind)].load(std::memory_order_acquire);
    return device.id >= 0 && (row == nullptr || device.id < row->count);
  }

 private:
  struct Row {
    explicit Row(int n) : count(n), slots(new std::atomic<T*>[static_cast<std::size_t>(n)]) {
      for (int i = 0; i < n; ++i) slots[static_cast<std::size_t>(i)].store(nullptr);
    }
    const int count;
    std::unique_ptr<std::atomic<T*>[]> slots;
  };

  static std::size_t index(DeviceKind kind) noexcept { return static_cast<std::size_t>(kind); }

  std::array<std::atomic<Row*>, kKinds> rows_{};
};

}  // namespace tandem::detail
