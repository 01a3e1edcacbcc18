// Creating arrays. Every function returns at once; the filling is an op on the new array's var.
//
//   auto a = nd::zeros({2, 3});                        // float32 on cpu(0)
//   auto b = nd::full({2, 3}, 7.0, nd::int64);         // int64 sevens
//   auto c = nd::arange(0, 10, 2);                     // [0. 2. 4. 6. 8.]
//   auto d = nd::array({{1, 2}, {3, 4}});              // float32 2x2
//   auto e = nd::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});  // float64 2x3
//
// Arrays are created on the engine of the innermost nd::EngineScope of the calling thread, or
// the process-wide tandem::Engine::get(). Asking for a device that is not present (device_count
// of its kind is 0, or its id is too large) throws tandem::Error naming the device. Shapes with
// a negative dimension or a byte size past 2^63 throw tandem::Error naming the shape.
#pragma once

#include <initializer_list>
#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

// Where a cpu array's memory lives: pageable (the default) or pinned, page-locked memory from
// tandem::pinned_host_pool() that a GPU's copy engine reads and writes directly (see
// NDArray::is_pinned). Pinned memory is a scarce resource of the operating system: pin the
// arrays that cross the bus often (input batches, results read back), not everything. Asking
// for pinned memory on an accelerator device, or in a process without an accelerator, throws
// tandem::Error.
//
//   auto batch = nd::empty({64, 784}, nd::float32, tandem::cpu(), nd::HostMemory::pinned);
enum class HostMemory { pageable, pinned };

// An array to be written later. Its values are zeros until then: tandem never shows memory
// that no op wrote (it could hold the values of an unrelated freed array).
NDArray empty(Shape shape, DType dtype = float32, Device device = cpu());
NDArray empty(Shape shape, Device device);
NDArray empty(Shape shape, DType dtype, Device device, HostMemory memory);
NDArray zeros(Shape shape, DType dtype = float32, Device device = cpu());
NDArray zeros(Shape shape, Device device);
NDArray zeros(Shape shape, DType dtype, Device device, HostMemory memory);
NDArray ones(Shape shape, DType dtype = float32, Device device = cpu());
NDArray ones(Shape shape, Device device);
NDArray ones(Shape shape, DType dtype, Device device, HostMemory memory);
NDArray full(Shape shape, double value, DType dtype = float32, Device device = cpu());
NDArray full(Shape shape, double value, Device device);
NDArray full(Shape shape, double value, DType dtype, Device device, HostMemory memory);
// [start, stop) in steps of `step` (non-zero), as a 1-D array.
NDArray arange(double start, double stop, double step = 1.0, DType dtype = float32,
               Device device = cpu());
NDArray arange(double stop);

// A 1-D float32 array, or a 2-D one from rows of equal length: nd::array({1, 2, 3}).
NDArray array(std::initializer_list<double> values, Device device = cpu());
NDArray array(std::initializer_list<std::initializer_list<double>> rows, Device device = cpu());

// An array of `shape` holding `count` values of `dtype` copied from host memory at `data`;
// `count` must equal the shape's number of elements.
NDArray from_host(const void* data, std::int64_t count, DType dtype, Shape shape,
                  Device device = cpu());

// An array of `values` (float, double, int32_t or int64_t; the dtype follows T) with `shape`,
// which must have values.size() elements; 1-D when no shape is given.
template <class T>
NDArray from_vector(const std::vector<T>& values, Shape shape, Device device = cpu()) {
  return from_host(values.data(), static_cast<std::int64_t>(values.size()), ops::dtype_of<T>(),
                   shape, device);
}
template <class T>
NDArray from_vector(const std::vector<T>& values, Device device = cpu()) {
  const auto count = static_cast<std::int64_t>(values.size());
  return from_host(values.data(), count, ops::dtype_of<T>(), Shape{count}, device);
}

// Arrays like `other` (shape, dtype, device, engine).
NDArray zeros_like(const NDArray& other);
NDArray ones_like(const NDArray& other);

}  // namespace tandem::nd
