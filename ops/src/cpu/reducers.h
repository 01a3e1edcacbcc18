// The reduction rules, one struct per ReduceOp: an accumulator with an identity, `add` for one
// element (with its index, for argmax), `merge` for two partial results in order, and `finish`.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tandem/ops/convert.h"
#include "tandem/ops/dtype.h"
#include "tandem/ops/functors.h"

namespace tandem::ops::cpu {

template <class T>
struct SumReducer {
  using Acc = AccumulatorType<T>;
  static Acc identity() { return Acc(0); }
  static void add(Acc& acc, T value, std::int64_t) {
    acc = functors::wrapping_add(acc, static_cast<Acc>(value));
  }
  static void merge(Acc& acc, const Acc& other) { acc = functors::wrapping_add(acc, other); }
  template <class Out>
  static Out finish(const Acc& acc, std::int64_t) {
    return convert<Out>(acc);
  }
};

template <class T>
struct MeanReducer : SumReducer<T> {
  using Acc = AccumulatorType<T>;
  template <class Out>
  static Out finish(const Acc& acc, std::int64_t count) {
    if constexpr (std::is_integral_v<Acc>) {
      return convert<Out>(count == 0 ? Acc(0) : acc / count);
    } else {
      return convert<Out>(acc / static_cast<double>(count));
    }
  }
};

template <class T>
struct NormReducer : SumReducer<T> {
  using Acc = AccumulatorType<T>;
  static void add(Acc& acc, T value, std::int64_t) {
    acc += static_cast<Acc>(value) * static_cast<Acc>(value);
  }
  template <class Out>
  static Out finish(const Acc& acc, std::int64_t) {
    return convert<Out>(std::sqrt(static_cast<double>(acc)));
  }
};

// `Better(a, b)`: a should replace b as the running extreme. A NaN replaces any number and is
// never replaced, so NaN propagates.
template <class T, bool kMax>
struct ExtremeReducer {
  using Acc = T;
  static Acc identity() {
    if constexpr (std::is_floating_point_v<T>) {
      return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    } else {
      return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
  }
  static bool better(T a, T b) {
    if (b != b) return false;
    if (a != a) return true;
    return kMax ? a > b : a < b;
  }
  static void add(Acc& acc, T value, std::int64_t) {
    if (better(value, acc)) acc = value;
  }
  static void merge(Acc& acc, const Acc& other) {
    if (better(other, acc)) acc = other;
  }
  template <class Out>
  static Out finish(const Acc& acc, std::int64_t) {
    return convert<Out>(acc);
  }
};

template <class T>
struct ArgmaxReducer {
  struct Acc {
    T value;
    std::int64_t index;  // -1: nothing seen yet
  };
  static Acc identity() { return Acc{T(0), -1}; }
  // The first of equal values wins: add sees indices in increasing order, merge gets the later
  // block second.
  static void add(Acc& acc, T value, std::int64_t index) {
    if (acc.index < 0 || ExtremeReducer<T, true>::better(value, acc.value)) acc = Acc{value, index};
  }
  static void merge(Acc& acc, const Acc& other) {
    if (other.index < 0) return;
    if (acc.index < 0 || ExtremeReducer<T, true>::better(other.value, acc.value)) acc = other;
  }
  template <class Out>
  static Out finish(const Acc& acc, std::int64_t) {
    return static_cast<Out>(acc.index);
  }
};

}  // namespace tandem::ops::cpu
