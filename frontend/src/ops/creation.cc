// Creation functions: allocate on the current engine, then queue the op that fills the array.
#include "tandem/nd/creation.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/access.h"
#include "core/backend.h"
#include "core/checks.h"
#include "core/elementwise_push.h"
#include "core/kernels.h"
#include "core/lazy_view.h"
#include "core/op_definition.h"
#include "tandem/accel/accelerator.h"
#include "tandem/errors.h"
#include "tandem/nd/engine_scope.h"

namespace tandem::nd {

namespace {

NDArray filled(const char* op, Engine& engine, const Shape& shape, double value, DType dtype,
               Device device, HostMemory memory = HostMemory::pageable) {
  MemoryPool* pinned = memory == HostMemory::pinned ? &pinned_host_pool() : nullptr;
  NDArray out =
      detail::allocate_array(engine, shape, dtype, device, op, detail::FirstWrite::by_op, pinned);
  const detail::DenseRef data = detail::dense_ref(out);
  const std::int64_t n = out.size();
  engine.push(
      [data, n, dtype, value](RunContext& ctx) {
        detail::kernels(ctx).fill(ctx.stream(),
                                  ops::contiguous_view(data.resolve(), dtype, Shape{n}), value);
      },
      device, {}, {out.var()}, {.name = op});
  return out;
}

}  // namespace

// Fresh memory may hold the values of a freed array (the host and device pools reuse blocks),
// and no value of tandem's is ever read from memory that no op wrote: an empty array is filled
// with zeros, like zeros(). Every other array is written whole by the op that creates it, or
// poisoned when that op fails, so fresh memory is never observable through any of them.
NDArray empty(Shape shape, DType dtype, Device device) {
  return filled("empty", current_engine(), shape, 0.0, dtype, device);
}

NDArray empty(Shape shape, Device device) {
  return empty(shape, float32, device);
}

NDArray zeros(Shape shape, DType dtype, Device device) {
  return filled("zeros", current_engine(), shape, 0.0, dtype, device);
}

NDArray zeros(Shape shape, Device device) {
  return zeros(shape, float32, device);
}

NDArray ones(Shape shape, DType dtype, Device device) {
  return filled("ones", current_engine(), shape, 1.0, dtype, device);
}

NDArray ones(Shape shape, Device device) {
  return ones(shape, float32, device);
}

NDArray full(Shape shape, double value, DType dtype, Device device) {
  return filled("full", current_engine(), shape, value, dtype, device);
}

NDArray full(Shape shape, double value, Device device) {
  return full(shape, value, float32, device);
}

NDArray empty(Shape shape, DType dtype, Device device, HostMemory memory) {
  return filled("empty", current_engine(), shape, 0.0, dtype, device, memory);
}

NDArray zeros(Shape shape, DType dtype, Device device, HostMemory memory) {
  return filled("zeros", current_engine(), shape, 0.0, dtype, device, memory);
}

NDArray ones(Shape shape, DType dtype, Device device, HostMemory memory) {
  return filled("ones", current_engine(), shape, 1.0, dtype, device, memory);
}

NDArray full(Shape shape, double value, DType dtype, Device device, HostMemory memory) {
  return filled("full", current_engine(), shape, value, dtype, device, memory);
}

NDArray zeros_like(const NDArray& other) {
  detail::check_defined("zeros_like", other);
  return filled("zeros_like", other.engine(), other.shape(), 0.0, other.dtype(), other.device());
}

NDArray ones_like(const NDArray& other) {
  detail::check_defined("ones_like", other);
  return filled("ones_like", other.engine(), other.shape(), 1.0, other.dtype(), other.device());
}

NDArray arange(double start, double stop, double step, DType dtype, Device device) {
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop)) {
    throw Error("tandem: arange: start, stop and step must be finite and step non-zero (got " +
                std::to_string(start) + ", " + std::to_string(stop) + ", " + std::to_string(step) +
                ")");
  }
  const double count = std::ceil((stop - start) / step);
  if (count > 9.2e18) {
    throw Error("tandem: arange: " + std::to_string(count) + " elements overflow a 64-bit size");
  }
  detail::check_computable("arange", dtype);
  const auto n = static_cast<std::int64_t>(std::max(0.0, count));
  NDArray out = detail::allocate_array(current_engine(), Shape{n}, dtype, device, "arange");
  const detail::DenseRef data = detail::dense_ref(out);
  out.engine().push(
      [data, n, dtype, start, step](RunContext& ctx) {
        detail::kernels(ctx).arange(
            ctx.stream(), ops::contiguous_view(data.resolve(), dtype, Shape{n}), start, step);
      },
      device, {}, {out.var()}, {.name = "arange"});
  return out;
}

NDArray arange(double stop) {
  return arange(0.0, stop);
}

namespace {

NDArray copy_from_host(const char* op, const void* data, std::int64_t count, DType dtype,
                       const Shape& shape, Device device) {
  detail::check_dtype(op, dtype);
  const std::int64_t n = ops::checked_num_elements(shape, ops::dtype_size(dtype), op);
  if (n != count) {
    throw Error(std::string("tandem: ") + op + ": " + std::to_string(count) +
                " values do not fill shape " + shape.to_string() + " (" + std::to_string(n) +
                " elements)");
  }
  // On an accelerator the values go through a host array and an H2D copy op, so the caller
  // never waits for the device.
  if (device.is_accelerator()) {
    detail::require_backend(device, op);
    return copy_from_host(op, data, count, dtype, shape, cpu()).copyto(device);
  }
  // A fresh storage (never a parked one, which queued ops may still use), so the copy happens
  // here, in the caller.
  NDArray out = detail::allocate_array(current_engine(), shape, dtype, device, op,
                                       detail::FirstWrite::by_caller);
  if (out.size() > 0) {
    std::memcpy(out.view().data, data,
                static_cast<std::size_t>(out.size()) * ops::dtype_size(dtype));
  }
  return out;
}

}  // namespace

NDArray from_host(const void* data, std::int64_t count, DType dtype, Shape shape, Device device) {
  return copy_from_host("from_vector", data, count, dtype, shape, device);
}

NDArray array(std::initializer_list<double> values, Device device) {
  const std::vector<float> data(values.begin(), values.end());
  const auto n = static_cast<std::int64_t>(data.size());
  return copy_from_host("array", data.data(), n, float32, Shape{n}, device);
}

NDArray array(std::initializer_list<std::initializer_list<double>> rows, Device device) {
  const std::size_t cols = rows.size() == 0 ? 0 : rows.begin()->size();
  std::vector<float> data;
  data.reserve(rows.size() * cols);
  for (const auto& row : rows) {
    if (row.size() != cols) {
      throw Error("tandem: array: rows have different lengths (" + std::to_string(cols) + " and " +
                  std::to_string(row.size()) + ")");
    }
    data.insert(data.end(), row.begin(), row.end());
  }
  return from_vector(
      data, Shape{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols)}, device);
}

namespace detail {
// No op of this file has a record yet (core/op_definition.h).
TANDEM_OP_DEFINITIONS(creation)
}  // namespace detail

}  // namespace tandem::nd
