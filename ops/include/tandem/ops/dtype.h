// DType: the element types an array can hold, and a dispatcher from the runtime tag to the C++
// type, so that kernels are written once as templates.
//
//   tandem::ops::dispatch_dtype(dtype, [&]<class T>(T) { fill<T>(...); });
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tandem::ops {

enum class DType : std::uint8_t { float32, float64, int32, int64 };

constexpr std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32:
    case DType::int32:
      return 4;
    case DType::float64:
    case DType::int64:
      return 8;
  }
  return 0;
}

// False for a value outside the enumeration (e.g. static_cast<DType>(99)).
constexpr bool is_valid(DType dtype) {
  return static_cast<std::uint8_t>(dtype) <= static_cast<std::uint8_t>(DType::int64);
}

constexpr bool is_floating(DType dtype) {
  return dtype == DType::float32 || dtype == DType::float64;
}

// "float32", "float64", "int32", "int64".
const char* dtype_name(DType dtype);

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) {
    return DType::float32;
  } else if constexpr (std::is_same_v<T, double>) {
    return DType::float64;
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return DType::int32;
  } else {
    static_assert(std::is_same_v<T, std::int64_t>,
                  "tandem arrays hold float, double, int32 or int64");
    return DType::int64;
  }
}

// Calls fn(T{}) with T the C++ type of `dtype`.
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
  }
  return fn(std::int64_t{});
}

// The type reductions accumulate in: double for floating types (a float32 sum of millions of
// elements would lose most of its digits), int64 for integers.
template <class T>
using AccumulatorType = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

}  // namespace tandem::ops
