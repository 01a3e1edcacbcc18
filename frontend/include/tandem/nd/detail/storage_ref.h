// StorageRef: the counted reference an NDArray holds to its storage (frontend/src/core/storage.h).
// Not part of the public API; it lives in a public header only because NDArray holds one.
//
// Intrusive rather than std::shared_ptr: creating an array then costs one pooled object and no
// separate control block, which matters when a program queues millions of tiny ops. The last
// reference does not free the storage: it hands it to the engine, which frees it after the
// last op on it (see storage.h).
#pragma once

#include <utility>

namespace tandem::nd::detail {

struct Storage;

void retain(Storage* storage) noexcept;
void release(Storage* storage) noexcept;

class StorageRef {
 public:
  StorageRef() = default;
  // Takes over one reference the caller holds.
  explicit StorageRef(Storage* adopted) noexcept : storage_(adopted) {}
  StorageRef(const StorageRef& other) noexcept : storage_(other.storage_) {
    if (storage_ != nullptr) retain(storage_);
  }
  StorageRef(StorageRef&& other) noexcept : storage_(std::exchange(other.storage_, nullptr)) {}
  StorageRef& operator=(StorageRef other) noexcept {
    std::swap(storage_, other.storage_);
    return *this;
  }
  ~StorageRef() {
    if (storage_ != nullptr) release(storage_);
  }

  Storage* get() const { return storage_; }
  Storage* operator->() const { return storage_; }
  explicit operator bool() const { return storage_ != nullptr; }
  friend bool operator==(const StorageRef& a, const StorageRef& b) {
    return a.storage_ == b.storage_;
  }

 private:
  Storage* storage_ = nullptr;
};

}  // namespace tandem::nd::detail
