// The element-wise op records (tandem/ops/unary_ops.h, binary_ops.h) as the tests see them: one
// entry per row, with its name, its nd:: function, a host reference (the row's own functor, in
// double) and whether it is differentiable. The value, gradient and export tests iterate these,
// so a new row is tested on every device with no test edit.
#pragma once

#include <tandem/ops/binary_ops.h>
#include <tandem/ops/op_kinds.h>
#include <tandem/ops/unary_ops.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "frontend_test_util.h"

namespace tandem::testing {

struct UnaryRow {
  ops::UnaryOp op;
  const char* name;
  NDArray (*function)(const NDArray&);  // nd::name
  double (*reference)(double);          // the functor on doubles
  double (*integer_reference)(double);  // the functor on int64 (NaN for a floating-only row)
  bool floating_only;
  bool differentiable;
  // Whether the row is defined on every real input; else the tests use inputs above 0.5.
  bool whole_line;
};

struct BinaryRow {
  ops::BinaryOp op;
  const char* name;
  NDArray (*function)(const NDArray&, const NDArray&);  // nd::name
  double (*reference)(double, double);
  double (*integer_reference)(double, double);
  bool floating_only;
  bool differentiable;
};

// The gradient column of a row that has none.
inline bool names_a_gradient(const char* column) {
  return std::strcmp(column, "no_gradient") != 0;
}

inline const std::vector<UnaryRow>& unary_rows() {
  static const std::vector<UnaryRow> rows = [] {
    std::vector<UnaryRow> all;
#define TANDEM_TEST_UNARY_ROW(name, Functor, dtypes, flops, saves, gradient)          \
  all.push_back(UnaryRow{                                                             \
      ops::UnaryOp::name, #name, static_cast<NDArray (*)(const NDArray&)>(&nd::name), \
      [](double v) { return ops::functors::Functor{}(v); },                           \
      [](double v) {                                                                  \
        using F = ops::functors::Functor;                                             \
        if constexpr (ops::functor_defined_for<std::int64_t, F>()) {                  \
          return static_cast<double>(F{}(static_cast<std::int64_t>(v)));              \
        } else {                                                                      \
          return std::nan("");                                                        \
        }                                                                             \
      },                                                                              \
      ops::DTypeRule::dtypes == ops::DTypeRule::floating, names_a_gradient(#gradient), true});
    TANDEM_UNARY_OPS(TANDEM_TEST_UNARY_ROW)
#undef TANDEM_TEST_UNARY_ROW
    // Which rows need positive inputs is read from the reference: a NaN or infinity on the
    // negative half-line or at zero.
    for (UnaryRow& row : all) {
      for (double v : {-1.5, -0.5, 0.0}) {
        if (!std::isfinite(row.reference(v))) row.whole_line = false;
      }
    }
    return all;
  }();
  return rows;
}

inline const std::vector<BinaryRow>& binary_rows() {
  static const std::vector<BinaryRow> rows = [] {
    std::vector<BinaryRow> all;
#define TANDEM_TEST_BINARY_ROW(name, Functor, dtypes, flops, saves_a, gradient_a, saves_b,     \
                               gradient_b)                                                     \
  all.push_back(BinaryRow{ops::BinaryOp::name, #name,                                          \
                          static_cast<NDArray (*)(const NDArray&, const NDArray&)>(&nd::name), \
                          [](double a, double b) { return ops::functors::Functor{}(a, b); },   \
                          [](double a, double b) {                                             \
                            using F = ops::functors::Functor;                                  \
                            if constexpr (ops::functor_defined_for<std::int64_t, F>()) {       \
                              return static_cast<double>(F{}(static_cast<std::int64_t>(a),     \
                                                             static_cast<std::int64_t>(b)));   \
                            } else {                                                           \
                              return std::nan("");                                             \
                            }                                                                  \
                          },                                                                   \
                          ops::DTypeRule::dtypes == ops::DTypeRule::floating,                  \
                          names_a_gradient(#gradient_a)});
    TANDEM_BINARY_OPS(TANDEM_TEST_BINARY_ROW)
#undef TANDEM_TEST_BINARY_ROW
    return all;
  }();
  return rows;
}

}  // namespace tandem::testing
