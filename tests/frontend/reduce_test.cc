// Reductions against a host reference: whole array and every axis, keepdims, strided inputs,
// every dtype; and big arrays that take the parallel path.
#include <limits>

#include "frontend_test_util.h"

namespace tandem::testing {

namespace {

enum class Kind { sum, mean, max, min, argmax, norm };

// Reference over the values `v` (in order); integer means truncate like the kernel.
double reference(Kind kind, const std::vector<double>& v, bool integral) {
  switch (kind) {
    case Kind::sum: {
      double s = 0;
      for (double x : v) s += x;
      return s;
    }
    case Kind::mean: {
      double s = 0;
      for (double x : v) s += x;
      return integral ? std::trunc(s / static_cast<double>(v.size()))
                      : s / static_cast<double>(v.size());
    }
    case Kind::max:
      return *std::max_element(v.begin(), v.end());
    case Kind::min:
      return *std::min_element(v.begin(), v.end());
    case Kind::argmax:
      return static_cast<double>(std::max_element(v.begin(), v.end()) - v.begin());
    case Kind::norm: {
      double s = 0;
      for (double x : v) s += x * x;
      return std::sqrt(s);
    }
  }
  return 0;
}

NDArray apply(Kind kind, const NDArray& x) {
  switch (kind) {
    case Kind::sum:
      return nd::sum(x);
    case Kind::mean:
      return nd::mean(x);
    case Kind::max:
      return nd::max(x);
    case Kind::min:
      return nd::min(x);
    case Kind::argmax:
      return nd::argmax(x);
    case Kind::norm:
      break;
  }
  return nd::norm(x);
}

NDArray apply(Kind kind, const NDArray& x, int axis, bool keepdims) {
  switch (kind) {
    case Kind::sum:
      return nd::sum(x, axis, keepdims);
    case Kind::mean:
      return nd::mean(x, axis, keepdims);
    case Kind::max:
      return nd::max(x, axis, keepdims);
    case Kind::min:
      return nd::min(x, axis, keepdims);
    case Kind::argmax:
      return nd::argmax(x, axis, keepdims);
    case Kind::norm:
      break;
  }
  return nd::norm(x, axis, keepdims);
}

Host reduce_axis_reference(Kind kind, const Host& h, int axis, bool keepdims, bool integral) {
  Shape out_shape = h.shape.without_axis(axis);
  Host out{out_shape, {}};
  for (std::int64_t o = 0; o < out_shape.num_elements(); ++o) {
    auto multi = unravel(o, out_shape);
    multi.insert(multi.begin() + axis, 0);
    std::vector<double> line;
    for (std::int64_t k = 0; k < h.shape[axis]; ++k) {
      multi[static_cast<std::size_t>(axis)] = k;
      line.push_back(h.at(ravel(multi, h.shape)));
    }
    out.values.push_back(reference(kind, line, integral));
  }
  if (keepdims) {
    out.shape = h.shape;
    out.shape[axis] = 1;
  }
  return out;
}

const std::vector<Kind> kKinds{Kind::sum, Kind::mean,   Kind::max,
                               Kind::min, Kind::argmax, Kind::norm};

}  // namespace

TEST_SUITE("frontend.reduce") {
  TEST_CASE("whole-array and per-axis reductions match the reference") {
    std::mt19937_64 rng(11);
    for (DType dtype : {nd::float32, nd::float64, nd::int32, nd::int64}) {
      const bool integral = !ops::is_floating(dtype);
      for (const Shape& shape : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{4, 1, 3}}) {
        Host h = random_host(shape, rng, -50, 50, integral);
        for (double& v : h.values) v = round_to(v, dtype);
        const NDArray x = to_array(h, dtype);
        for (Kind kind : kKinds) {
          if (kind == Kind::norm && integral) continue;
          const DType out_type = kind == Kind::argmax ? nd::int64 : dtype;
          const NDArray whole = apply(kind, x);
          CHECK(whole.dtype() == out_type);
          check_matches(whole, Host{{1}, {round_to(reference(kind, h.values, integral), out_type)}},
                        "whole " + std::to_string(int(kind)) + " " + dtype_name(dtype) + " " +
                            shape.to_string());
          for (int axis = -shape.ndim(); axis < shape.ndim(); ++axis) {
            const int a = axis < 0 ? axis + shape.ndim() : axis;
            for (bool keepdims : {false, true}) {
              Host expected = reduce_axis_reference(kind, h, a, keepdims, integral);
              for (double& v : expected.values) v = round_to(v, out_type);
              check_matches(apply(kind, x, axis, keepdims), expected,
                            "axis " + std::to_string(axis) + " kind " + std::to_string(int(kind)) +
                                " " + dtype_name(dtype) + " " + shape.to_string());
            }
          }
        }
      }
    }
  }

  TEST_CASE("reductions of non-contiguous views") {
    std::mt19937_64 rng(12);
    const Host base = random_host({9, 6}, rng);
    const NDArray x = to_array(base, nd::float64);
    for (Kind kind : kKinds) {
      const Host t = host_transpose(base);
      const Host s = host_slice(base, 2, 9, 3);
      check_matches(apply(kind, x.T()), Host{{1}, {reference(kind, t.values, false)}},
                    "whole of T");
      check_matches(apply(kind, x.slice(2, 9, 3)), Host{{1}, {reference(kind, s.values, false)}},
                    "whole of slice");
      for (int axis : {0, 1}) {
        check_matches(apply(kind, x.T(), axis, false),
                      reduce_axis_reference(kind, t, axis, false, false), "axis of T");
        check_matches(apply(kind, x.slice(2, 9, 3), axis, false),
                      reduce_axis_reference(kind, s, axis, false, false), "axis of slice");
      }
    }
  }

  TEST_CASE("big reductions take the parallel path and stay exact where they can") {
    const std::int64_t n = scaled(3000000, 10000);
    const NDArray ramp = nd::arange(0, static_cast<double>(n), 1, nd::int64);
    CHECK(nd::sum(ramp).scalar<std::int64_t>() == n * (n - 1) / 2);
    CHECK(nd::max(ramp).scalar<std::int64_t>() == n - 1);
    CHECK(nd::argmax(ramp).scalar<std::int64_t>() == n - 1);
    CHECK(nd::min(ramp).scalar<std::int64_t>() == 0);
    const NDArray ones = nd::ones({n}, nd::float32);
    CHECK(nd::sum(ones).scalar<double>() == static_cast<double>(n));  // double accumulation: exact
    CHECK(nd::mean(ones).scalar<double>() == 1.0);
    const std::int64_t rows = scaled(2000, 50);
    const NDArray m = nd::ones({rows, 1000}, nd::float64);
    const auto by_column = nd::sum(m, 0).to_vector<double>();
    const auto by_row = nd::sum(m, 1).to_vector<double>();
    CHECK(std::all_of(by_column.begin(), by_column.end(),
                      [&](double v) { return v == static_cast<double>(rows); }));
    CHECK(std::all_of(by_row.begin(), by_row.end(), [](double v) { return v == 1000.0; }));
  }

  TEST_CASE("argmax takes the first of equal values; max and min propagate NaN") {
    const NDArray x = nd::array({{1, 5, 5}, {7, 7, 2}});
    CHECK(nd::argmax(x).scalar<std::int64_t>() == 3);
    CHECK(nd::argmax(x, 1).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
    CHECK(nd::argmax(x, 0, true).shape() == Shape{1, 3});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const NDArray y = nd::from_vector(std::vector<double>{1, nan, 3});
    CHECK(std::isnan(nd::max(y).scalar<double>()));
    CHECK(std::isnan(nd::min(y).scalar<double>()));
    CHECK(nd::argmax(y).scalar<std::int64_t>() == 1);
    CHECK(nd::sum(nd::zeros({0})).scalar<double>() == 0.0);
    CHECK(nd::sum(nd::zeros({3, 0}), 1).to_vector<float>() == std::vector<float>(3, 0.0f));
    CHECK(nd::norm(nd::array({3, 4})).scalar<double>() == 5.0);
    CHECK(nd::ones({2, 3}).sum(-1).to_vector<float>() == std::vector<float>{3, 3});
    CHECK(nd::ones({2, 3}).mean().scalar<float>() == 1.0f);
  }

}  // TEST_SUITE

}  // namespace tandem::testing
