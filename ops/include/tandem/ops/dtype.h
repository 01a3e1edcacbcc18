// DType: the element types an array can hold, and a dispatcher from the runtime tag to the C++
// type, so that kernels are written once as templates.
//
//   tandem::ops::dispatch_dtype(dtype, [&]<class T>(T) { fill<T>(...); });
//
// uint8 is a storage type (images as they come from the file, a quarter of float32's bytes):
// uint8 arrays are created, copied, converted with astype, moved between devices, saved, loaded
// and printed, but not computed with. dispatch_dtype, which the compute kernels use, covers the
// four compute types; dispatch_storage_dtype, which copies and conversions use, adds uint8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace tandem::ops {

enum class DType : std::uint8_t { float32, float64, int32, int64, uint8 };

constexpr std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32:
    case DType::int32:
      return 4;
    case DType::float64:
    case DType::int64:
      return 8;
    case DType::uint8:
      return 1;
  }
  return 0;
}

// False for a value outside the enumeration (e.g. static_cast<DType>(99)).
constexpr bool is_valid(DType dtype) {
  return static_cast<std::uint8_t>(dtype) <= static_cast<std::uint8_t>(DType::uint8);
}

constexpr bool is_floating(DType dtype) {
  return dtype == DType::float32 || dtype == DType::float64;
}

// A type the compute kernels take (every dtype but uint8).
constexpr bool is_computable(DType dtype) {
  return is_valid(dtype) && dtype != DType::uint8;
}

// "float32", "float64", "int32", "int64", "uint8".
const char* dtype_name(DType dtype);

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) {
    return DType::float32;
  } else if constexpr (std::is_same_v<T, double>) {
    return DType::float64;
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return DType::int32;
  } else if constexpr (std::is_same_v<T, std::uint8_t>) {
    return DType::uint8;
  } else {
    static_assert(std::is_same_v<T, std::int64_t>,
                  "tandem arrays hold float, double, int32, int64 or uint8");
    return DType::int64;
  }
}

// Throws tandem::Error: a compute kernel was handed a uint8 array (the front end refuses them
// at the call; this is the backstop that keeps a missed check from misreading memory).
[[noreturn]] void throw_not_computable(DType dtype);

// Calls fn(T{}) with T the C++ type of `dtype`, one of the compute types (throws for uint8).
template <class Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::float32:
      return fn(float{});
    case DType::float64:
      return fn(double{});
    case DType::int32:
      return fn(std::int32_t{});
    case DType::int64:
      break;
    case DType::uint8:
      throw_not_computable(dtype);
  }
  return fn(std::int64_t{});
}

// dispatch_dtype over every dtype, uint8 included: for copies and conversions.
template <class Fn>
decltype(auto) dispatch_storage_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::uint8) return fn(std::uint8_t{});
  return dispatch_dtype(dtype, std::forward<Fn>(fn));
}

// The type reductions accumulate in: double for floating types (a float32 sum of millions of
// elements would lose most of its digits), int64 for integers.
template <class T>
using AccumulatorType = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

}  // namespace tandem::ops
