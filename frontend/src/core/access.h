// NDArrayAccess: how the front end's own files build and take apart NDArray handles. Not part of
// the public API.
#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "core/storage.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

struct NDArrayAccess {
  static NDArray make(StorageRef storage, DType dtype, const Shape& shape, const Strides& strides,
                      std::int64_t offset) {
    NDArray array;
    array.storage_ = std::move(storage);
    array.dtype_ = dtype;
    array.shape_ = shape;
    array.strides_ = strides;
    array.offset_ = offset;
    return array;
  }
  static const StorageRef& storage(const NDArray& array) { return array.storage_; }
  static std::int64_t offset(const NDArray& array) { return array.offset_; }
  static const std::shared_ptr<autograd::detail::Node>& grad_node(const NDArray& array) {
    return array.grad_node_;
  }
  static std::uint32_t grad_output(const NDArray& array) { return array.grad_output_; }
  static void set_grad_node(NDArray& array, std::shared_ptr<autograd::detail::Node> node,
                            std::uint32_t output) {
    array.grad_node_ = std::move(node);
    array.grad_output_ = output;
  }
};

// Whether writing every element of `array` writes its whole storage. Views never repeat an
// element (slices, rows, transposes and reshapes pick distinct elements of one storage), so a
// view covers its storage exactly when it spans as many bytes.
inline bool covers_storage(const NDArray& array) {
  return static_cast<std::size_t>(array.size()) * ops::dtype_size(array.dtype()) ==
         NDArrayAccess::storage(array)->bytes;
}

// The read set of an op that reads `input` (when given) and writes `out`.
//
// A write that covers only part of out's storage (a slice, a row) is a read-modify-write of the
// storage: it also lists out's var as read. So when the storage is poisoned (an op that should
// have written it failed, and its memory holds whatever it held before), the engine skips the
// partial write and the poison stays on the whole storage: a write into part of a poisoned
// array can never make the rest of it readable. Only a write of the whole storage clears the
// poison. A whole write lists out's var only as written, so its op record is unchanged.
class WriteReads {
 public:
  explicit WriteReads(const NDArray& out, const NDArray* input = nullptr) {
    if (input != nullptr) vars_[count_++] = input->var();
    if (!covers_storage(out)) vars_[count_++] = out.var();
  }
  // Valid while this object lives: pass it straight to push.
  VarList list() const { return std::span<const Var>(vars_.data(), count_); }

 private:
  std::array<Var, 2> vars_{};
  std::size_t count_ = 0;
};

// A new dense array on `engine`: checks the shape's size (naming `op`), allocates, gives it a var.
// `first_write` says who writes it first (see FirstWrite in storage.h); `pinned`: a pinned cpu
// array whose memory comes from that pool.
NDArray allocate_array(Engine& engine, const Shape& shape, DType dtype, Device device,
                       const char* op, FirstWrite first_write = FirstWrite::by_op,
                       MemoryPool* pinned = nullptr);

}  // namespace tandem::nd::detail
