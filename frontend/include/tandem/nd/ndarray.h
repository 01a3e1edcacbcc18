// NDArray: an n-dimensional array whose operations are queued on tandem's engine.
//
//   namespace nd = tandem::nd;
//   nd::NDArray a = nd::ones({1, 2});
//   nd::NDArray c = a * a + 2;          // returns at once: the work is queued on the engine
//   std::cout << c << "\n";             // a sync point: waits for c, prints
//                                       //   [[3. 3.]]
//                                       //   <NDArray 1x2 @cpu(0)>
//
// An NDArray is a handle: copying it copies the handle, not the data (`b = a` makes b another
// name for the same array). Its memory ("storage") is shared by every handle and view of it and
// has one engine var; every op that reads or writes the array is ordered by that var, and the
// memory is freed by an engine op that runs after every earlier op on it has finished, once the
// last handle is gone. Views (reshape, slice, operator[], T) share storage and var and differ in
// shape, strides and offset; writing into a view writes the original.
//
// Every method that returns an NDArray returns at once; only the sync functions (wait_to_read,
// wait_to_write, to_vector, scalar, operator<<) block, and they rethrow errors of the ops that
// produced the array. Mistakes the call can see (devices, shapes, dtypes, axes) throw
// tandem::Error at the call.
#pragma once

#include <chrono>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

#include "tandem/device.h"
#include "tandem/engine.h"
#include "tandem/nd/detail/storage_ref.h"
#include "tandem/ops/array_view.h"
#include "tandem/ops/dtype.h"
#include "tandem/ops/shape.h"

namespace tandem::autograd {
// What backward() does with an attached array's gradient: overwrite it (write), add to it
// (add, accumulating over several backward calls), or nothing (null: no gradient).
enum class GradReq { write, add, null };
namespace detail {
struct Node;
}
}  // namespace tandem::autograd

namespace tandem::nd {

using ops::DType;
using ops::dtype_name;
using ops::Shape;
using ops::Strides;
inline constexpr DType float32 = DType::float32;
inline constexpr DType float64 = DType::float64;
inline constexpr DType int32 = DType::int32;
inline constexpr DType int64 = DType::int64;
// Storage only (images from a file): create, copy, astype, save/load and print; astype to a
// compute type before any arithmetic.
inline constexpr DType uint8 = DType::uint8;

namespace detail {
struct NDArrayAccess;
}  // namespace detail

class NDArray {
 public:
  // A null handle: it names no array, and every operation on it throws tandem::Error.
  NDArray() = default;

  bool defined() const { return static_cast<bool>(storage_); }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const;
  Device context() const { return device(); }  // MXNet's name
  int ndim() const { return shape_.ndim(); }
  std::int64_t size() const { return shape_.num_elements(); }
  const Strides& strides() const { return strides_; }
  // Row-major and gap-free (views from slicing with a step, or transposing, are not).
  bool is_contiguous() const;
  // The engine that orders this array's ops, and the array's var in it.
  Engine& engine() const;
  Var var() const;
  // True when both handles use the same memory (same array, or views of one array).
  bool shares_storage_with(const NDArray& other) const;
  // What a kernel sees: pointer to the first element, dtype, shape, strides. The pointer may be
  // dereferenced only inside an op that declares this array's var.
  ops::ArrayView view() const;

  // --- views: share storage and var --------------------------------------------------------
  // One dimension may be -1 (inferred). A view when the array is contiguous, else a copy.
  NDArray reshape(Shape shape) const;
  // Rows [begin, end) with `step` along the first axis (negative begin/end count from the end,
  // as in Python; they are clamped to the array). step >= 1.
  NDArray slice(std::int64_t begin, std::int64_t end, std::int64_t step = 1) const;
  // Row `index` of the first axis, without that axis (x[i] of a 2x3 array has shape 3).
  NDArray operator[](std::int64_t index) const;
  // The transpose (axes reversed), as a view.
  NDArray T() const;

  // --- copies and devices ----------------------------------------------------------------------
  // A new array with the same values (contiguous).
  NDArray copy() const;
  // A new array on `device`, always (even when the array is already there).
  NDArray copyto(Device device) const;
  // Writes this array's values into `destination` (same shape and dtype, any device).
  void copyto(NDArray destination) const;
  // This very array when it is on `device` already, else copyto(device).
  NDArray as_in_context(Device device) const;
  // Pinned (page-locked) host memory: a cpu array that a GPU's copy engine reads and writes
  // directly, so copies to and from an accelerator skip the staging through pinned buffers and
  // run at the bus's speed (MXNet's cpu_pinned, PyTorch's pin_memory). Arrays are pinned when
  // made with nd::HostMemory::pinned, by pin_memory(), by copyto(cpu()) from an accelerator,
  // and as the DataLoader's host batches bound for an accelerator; views share it.
  bool is_pinned() const;
  // This very array when it is pinned already, else a pinned copy (tandem::pinned_host_pool()).
  // Throws tandem::Error for an array on an accelerator, or when the process has no
  // accelerator (no cuda device, no sim device).
  NDArray pin_memory() const;
  // A new array with the values converted to `dtype` (see tandem/ops/convert.h): floating to
  // integer truncates toward zero and saturates (NaN -> 0, +-inf -> the type's max / min).
  NDArray astype(DType dtype) const;

  // --- writes into this array (ops that write its var) --------------------------------------
  // this[...] = source, broadcast to this shape; same dtype and device.
  NDArray& assign(const NDArray& source);
  NDArray& assign(double value);
  NDArray& operator+=(const NDArray& other);
  NDArray& operator-=(const NDArray& other);
  NDArray& operator*=(const NDArray& other);
  NDArray& operator/=(const NDArray& other);
  NDArray& operator+=(double value);
  NDArray& operator-=(double value);
  NDArray& operator*=(double value);
  NDArray& operator/=(double value);

  // --- shortcuts for the free functions of the same name -----------------------------------
  NDArray exp() const;
  NDArray sum() const;
  NDArray sum(int axis, bool keepdims = false) const;
  NDArray mean() const;
  NDArray mean(int axis, bool keepdims = false) const;
  NDArray max() const;
  NDArray min() const;
  NDArray argmax() const;
  NDArray norm() const;

  // --- autograd (see tandem/nd/autograd.h) ---------------------------------------------------
  // Gives this handle a gradient buffer (zeros, same shape, dtype and device) and makes it a
  // leaf of the ops recorded from now on: backward() writes (or adds) its gradient there.
  // Floating-point arrays only. Handles copied from this one afterwards share the gradient;
  // copies made before do not.
  void attach_grad(autograd::GradReq req = autograd::GradReq::write);
  // The gradient buffer of an attached array (throws tandem::Error when never attached).
  NDArray grad() const;
  // The same array (a handle sharing the storage) without autograd history: ops on it are not
  // recorded through to this array.
  NDArray detach() const;
  // Attached (with a request other than null) or the output of a recorded op.
  bool needs_grad() const;
  // autograd::backward(*this, head_grad, retain_graph); a null head_grad: a one-element head
  // whose gradient is 1.
  void backward() const;
  void backward(const NDArray& head_grad, bool retain_graph = false) const;

  // --- sync points -------------------------------------------------------------------------------
  // Blocks until every op pushed so far that writes this array has finished; rethrows its error.
  void wait_to_read() const;
  // Blocks until every op pushed so far that reads or writes this array has finished.
  void wait_to_write() const;
  // The same, giving up after `timeout` with tandem::TimeoutError, whose message says what the
  // wait is blocked on (the op holding the array, the ops queued ahead, async ops waiting for
  // their Completion). Nothing is cancelled.
  void wait_to_read(std::chrono::milliseconds timeout) const;
  void wait_to_write(std::chrono::milliseconds timeout) const;
  // The values in row-major order, converted to T (waits for them first).
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> values(static_cast<std::size_t>(size()));
    read_into(values.data(), ops::dtype_of<T>());
    return values;
  }
  // The only value of a one-element array, converted to T (waits for it first).
  template <class T = double>
  T scalar() const {
    T value{};
    read_scalar_into(&value, ops::dtype_of<T>());
    return value;
  }

 private:
  friend struct detail::NDArrayAccess;
  void read_into(void* destination, DType destination_dtype) const;
  void read_scalar_into(void* destination, DType destination_dtype) const;

  detail::StorageRef storage_;
  DType dtype_ = DType::float32;
  Shape shape_;
  Strides strides_{};
  std::int64_t offset_ = 0;  // in elements, from the start of the storage
  // Where the autograd tape knows this handle from: output `grad_output_` of node `grad_node_`
  // (null when the handle has no history).
  std::shared_ptr<autograd::detail::Node> grad_node_;
  std::uint32_t grad_output_ = 0;
};

// Waits for the array, then prints its values and a tag, as MXNet does:
//   [[1. 2. 3.]
//    [4. 5. 6.]]
//   <NDArray 2x3 @cpu(0)>
// Arrays of more than 1000 elements print the first and last 3 entries of each axis.
std::ostream& operator<<(std::ostream& out, const NDArray& array);

}  // namespace tandem::nd
