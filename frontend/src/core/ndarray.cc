// NDArray's own methods: description, views, and the sync functions.
#include "tandem/nd/ndarray.h"

#include <algorithm>
#include <array>
#include <span>
#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/modes.h"
#include "core/views.h"
#include "tandem/errors.h"
#include "tandem/nd/creation.h"
#include "tandem/ops/kernels.h"

namespace tandem::nd {

using detail::check_defined;
using detail::NDArrayAccess;
using detail::throw_if_capturing;

namespace detail {

NDArray allocate_array(Engine& engine, const Shape& shape, DType dtype, Device device,
                       const char* op, FirstWrite first_write, MemoryPool* pinned) {
  check_dtype(op, dtype);
  const std::int64_t n = ops::checked_num_elements(shape, ops::dtype_size(dtype), op);
  auto storage =
      create_storage(engine, device, static_cast<std::size_t>(n) * ops::dtype_size(dtype), op,
                     first_write, pinned);
  return NDArrayAccess::make(std::move(storage), dtype, shape, ops::contiguous_strides(shape), 0);
}

}  // namespace detail

Device NDArray::device() const {
  check_defined("device", *this);
  return storage_->device;
}

bool NDArray::is_contiguous() const {
  return ops::ArrayView{nullptr, dtype_, shape_, strides_}.is_contiguous();
}

namespace {

// Cold and out of line: NDArray::engine() stays a few instructions on its hot path.
[[noreturn, gnu::noinline, gnu::cold]] void throw_engine_destroyed(const Shape& shape, DType dtype,
                                                                   Device device) {
  throw Error("tandem: an array of shape " + shape.to_string() + " " + dtype_name(dtype) + " on " +
              to_string(device) +
              " is used after the engine it was made on (Engine::create, under "
              "nd::EngineScope) was destroyed; only dropping it is allowed. Destroy a private "
              "engine after its arrays");
}

}  // namespace

// Through the var's owner, not `storage_->engine`: a private engine destroyed before its arrays
// leaves that pointer dangling, while the var's owner knows it is gone.
Engine& NDArray::engine() const {
  check_defined("engine", *this);
  Engine* engine = Engine::owner_if_alive(storage_->var);
  if (engine == nullptr) [[unlikely]]
    throw_engine_destroyed(shape_, dtype_, storage_->device);
  return *engine;
}

Var NDArray::var() const {
  check_defined("var", *this);
  return storage_->var;
}

bool NDArray::shares_storage_with(const NDArray& other) const {
  return storage_ && storage_ == other.storage_;
}

ops::ArrayView NDArray::view() const {
  check_defined("view", *this);
  char* base = static_cast<char*>(storage_->data_or_allocate()) +
               offset_ * static_cast<std::int64_t>(ops::dtype_size(dtype_));
  return ops::ArrayView{base, dtype_, shape_, strides_};
}

NDArray NDArray::reshape(Shape shape) const {
  check_defined("reshape", *this);
  int inferred = -1;
  std::int64_t known = 1;
  for (int i = 0; i < shape.ndim(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = i;
      continue;
    }
    if (shape[i] < 0) {
      throw Error("tandem: reshape: invalid target shape " + shape.to_string() +
                  " (at most one dimension may be -1, none other negative)");
    }
    known *= shape[i];
  }
  if (inferred >= 0) {
    if (known == 0 || size() % known != 0) {
      throw Error("tandem: reshape: cannot infer the -1 of " + shape.to_string() +
                  " for an array of shape " + shape_.to_string() + " (" + std::to_string(size()) +
                  " elements)");
    }
    shape[inferred] = size() / known;
  }
  ops::checked_num_elements(shape, ops::dtype_size(dtype_), "reshape");
  if (shape.num_elements() != size()) {
    throw Error("tandem: reshape: cannot reshape an array of shape " + shape_.to_string() + " (" +
                std::to_string(size()) + " elements) into " + shape.to_string() + " (" +
                std::to_string(shape.num_elements()) + " elements)");
  }
  if (!is_contiguous()) return copy().reshape(shape);
  NDArray out =
      NDArrayAccess::make(storage_, dtype_, shape, ops::contiguous_strides(shape), offset_);
  detail::report_view(detail::kReshape, {this}, nullptr, out);
  return out;
}

NDArray NDArray::slice(std::int64_t begin, std::int64_t end, std::int64_t step) const {
  check_defined("slice", *this);
  if (ndim() == 0) throw Error("tandem: slice: a 0-d array has no axis to slice");
  if (step < 1) {
    throw Error("tandem: slice: step must be at least 1, got " + std::to_string(step));
  }
  const std::int64_t rows = shape_[0];
  const auto clamp = [rows](std::int64_t i) {
    if (i < 0) i += rows;
    return std::clamp<std::int64_t>(i, 0, rows);
  };
  begin = clamp(begin);
  end = std::max(begin, clamp(end));
  Shape shape = shape_;
  Strides strides = strides_;
  shape[0] = (end - begin + step - 1) / step;
  strides[0] = strides_[0] * step;
  NDArray out =
      NDArrayAccess::make(storage_, dtype_, shape, strides, offset_ + begin * strides_[0]);
  const detail::SliceAttrs attrs{begin, end, step};
  detail::report_view(detail::kSlice, {this}, &attrs, out);
  return out;
}

NDArray NDArray::operator[](std::int64_t index) const {
  check_defined("operator[]", *this);
  if (ndim() == 0) throw Error("tandem: operator[]: a 0-d array cannot be indexed");
  const std::int64_t rows = shape_[0];
  if (index < -rows || index >= rows) {
    throw Error("tandem: operator[]: index " + std::to_string(index) +
                " is out of range for axis 0 of size " + std::to_string(rows) + " (shape " +
                shape_.to_string() + ")");
  }
  if (index < 0) index += rows;
  Strides strides{};
  for (int i = 1; i < ndim(); ++i)
    strides[static_cast<std::size_t>(i - 1)] = strides_[static_cast<std::size_t>(i)];
  NDArray out = NDArrayAccess::make(storage_, dtype_, shape_.without_axis(0), strides,
                                    offset_ + index * strides_[0]);
  const detail::IndexAttrs attrs{index};
  detail::report_view(detail::kIndex, {this}, &attrs, out, "operator[]");
  return out;
}

NDArray NDArray::T() const {
  check_defined("T", *this);
  Shape shape;
  Strides strides{};
  for (int i = ndim() - 1; i >= 0; --i) {
    strides[static_cast<std::size_t>(shape.ndim())] = strides_[static_cast<std::size_t>(i)];
    shape.push_back(shape_[i]);
  }
  NDArray out = NDArrayAccess::make(storage_, dtype_, shape, strides, offset_);
  if (detail::ops_observed()) {
    std::array<int, ops::kMaxDims> reversed{};
    for (int i = 0; i < ndim(); ++i) reversed[static_cast<std::size_t>(i)] = ndim() - 1 - i;
    const detail::TransposeAttrs attrs{
        std::span<const int>(reversed.data(), static_cast<std::size_t>(ndim()))};
    detail::report_view(detail::kTranspose, {this}, &attrs, out);
  }
  return out;
}

void NDArray::wait_to_read() const {
  check_defined("wait_to_read", *this);
  throw_if_capturing("wait_to_read");
  engine().wait_for_var(storage_->var);
}

void NDArray::wait_to_write() const {
  check_defined("wait_to_write", *this);
  throw_if_capturing("wait_to_write");
  engine().wait_to_write(storage_->var);
}

void NDArray::wait_to_read(std::chrono::milliseconds timeout) const {
  check_defined("wait_to_read", *this);
  throw_if_capturing("wait_to_read");
  engine().wait_for_var(storage_->var, timeout);
}

void NDArray::wait_to_write(std::chrono::milliseconds timeout) const {
  check_defined("wait_to_write", *this);
  throw_if_capturing("wait_to_write");
  engine().wait_to_write(storage_->var, timeout);
}

void NDArray::read_into(void* destination, DType destination_dtype) const {
  check_defined("to_vector", *this);
  throw_if_capturing("to_vector");
  // Device memory is read through a D2H copy op into a host array, which is then read here.
  if (device().is_accelerator()) return copyto(cpu()).read_into(destination, destination_dtype);
  wait_to_read();
  // The data is final once the wait returns: copy (and convert) it here, in the caller.
  ops::host_kernels().copy(nullptr, view(),
                           ops::contiguous_view(destination, destination_dtype, shape_));
}

void NDArray::read_scalar_into(void* destination, DType destination_dtype) const {
  check_defined("scalar", *this);
  throw_if_capturing("scalar");
  if (size() != 1) {
    throw Error("tandem: scalar: the array has shape " + shape_.to_string() + " (" +
                std::to_string(size()) + " elements); scalar() needs exactly one element");
  }
  read_into(destination, destination_dtype);
}

}  // namespace tandem::nd
