// clip, where, stack and split: values on every test device, views and gradients, bad input. Their
// gradients are also checked against finite differences (gradient_check_test.cc) and their
// export round trip in export_test.cc.
#include "frontend_test_util.h"
#include "test_devices.h"

namespace tandem::testing {

namespace {

std::vector<double> values_of(const NDArray& x) {
  return x.to_vector<double>();
}

NDArray iota(Shape shape, Device device) {
  const double n = static_cast<double>(shape.num_elements());
  return nd::arange(0, n, 1, nd::float32, device).reshape(shape);
}

}  // namespace

TEST_SUITE("frontend.array_ops") {
  TEST_CASE("clip bounds every element on every device") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      const NDArray x = nd::from_vector(std::vector<float>{-3, -1, 0, 0.5f, 2, 7}, {2, 3}, device);
      const NDArray y = nd::clip(x, -1, 2);
      CHECK(y.shape() == Shape{2, 3});
      CHECK(y.device() == device);
      CHECK(values_of(y) == std::vector<double>{-1, -1, 0, 0.5, 2, 2});
      const NDArray n = nd::from_vector(std::vector<std::int32_t>{-5, 3, 9}, {3}, device);
      CHECK(values_of(nd::clip(n, 0, 4)) == std::vector<double>{0, 3, 4});
    }
  }

  TEST_CASE("clip's gradient passes inside the bounds and stops outside") {
    NDArray x = nd::from_vector(std::vector<double>{-3, -0.5, 0.5, 3}, {4});
    x.attach_grad();
    {
      auto recording = autograd::record();
      nd::sum(nd::clip(x, -1, 1) * 2.0).backward();
    }
    CHECK(values_of(x.grad()) == std::vector<double>{0, 2, 2, 0});
  }

  TEST_CASE("where picks a or b by the condition, with broadcasting, on every device") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      const NDArray x = nd::from_vector(std::vector<float>{-2, 0, 3, 4, -1, 9}, {2, 3}, device);
      CHECK(values_of(nd::where(x > 0.0, x, -x)) == std::vector<double>{2, 0, 3, 4, 1, 9});
      // The branch not taken never reaches the result: no NaN or -inf from log(x <= 0).
      const std::vector<double> picked = values_of(nd::where(x > 0.0, nd::log(x), 0.0));
      for (double v : picked) CHECK(std::isfinite(v));
      // An integer condition of shape 3 broadcast along the rows, a row vector for b.
      const NDArray c = nd::from_vector(std::vector<std::int32_t>{1, 0, 2}, {3}, device);
      const NDArray b = nd::from_vector(std::vector<float>{10, 20, 30}, {3}, device);
      const NDArray y = nd::where(c, x, b);
      CHECK(y.shape() == Shape{2, 3});
      CHECK(y.dtype() == nd::float32);
      CHECK(values_of(y) == std::vector<double>{-2, 20, 3, 4, 20, 9});
      const NDArray n = nd::from_vector(std::vector<std::int64_t>{5, -5}, {2}, device);
      CHECK(values_of(nd::where(n > 0.0, n, n * 2.0)) == std::vector<double>{5, -10});
    }
  }

  TEST_CASE("where's gradient goes to the branch each element took, summed over broadcasts") {
    NDArray a = nd::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});
    NDArray b = nd::from_vector(std::vector<double>{5, 6}, {2});
    a.attach_grad();
    b.attach_grad();
    const NDArray c = nd::from_vector(std::vector<double>{1, 0, 0, 0}, {2, 2});
    {
      auto recording = autograd::record();
      nd::sum(nd::where(c, a, b) * 3.0).backward();
    }
    CHECK(values_of(a.grad()) == std::vector<double>{3, 0, 0, 0});
    CHECK(values_of(b.grad()) == std::vector<double>{3, 6});
  }

  TEST_CASE("stack joins equal shapes along a new axis on every device") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      const NDArray a = iota({2, 3}, device), b = iota({2, 3}, device) + 10.0;
      const NDArray s0 = nd::stack({a, b});
      CHECK(s0.shape() == Shape{2, 2, 3});
      CHECK(values_of(s0) == std::vector<double>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
      const NDArray s2 = nd::stack({a, b}, -1);
      CHECK(s2.shape() == Shape{2, 3, 2});
      CHECK(values_of(s2) == std::vector<double>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15});
      const NDArray s1 = nd::stack({a, b, a}, 1);
      CHECK(s1.shape() == Shape{2, 3, 3});
      CHECK(values_of(s1[0]) == std::vector<double>{0, 1, 2, 10, 11, 12, 0, 1, 2});
    }
  }

  TEST_CASE("split gives equal sections along any axis, on every device") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      const NDArray x = iota({4, 6}, device);
      const std::vector<NDArray> rows = nd::split(x, 2);
      REQUIRE(rows.size() == 2);
      CHECK(rows[1].shape() == Shape{2, 6});
      CHECK(values_of(rows[1]) ==
            std::vector<double>{12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
      const std::vector<NDArray> columns = nd::split(x, 3, -1);
      REQUIRE(columns.size() == 3);
      CHECK(columns[2].shape() == Shape{4, 2});
      CHECK(values_of(columns[2]) == std::vector<double>{4, 5, 10, 11, 16, 17, 22, 23});
      // Split and stacked back: the original.
      CHECK(values_of(nd::concat(columns, 1)) == values_of(x));
      const NDArray cube = iota({2, 3, 4}, device);
      const std::vector<NDArray> middle = nd::split(cube, 3, 1);
      CHECK(middle[1].shape() == Shape{2, 1, 4});
      CHECK(values_of(middle[1]) == std::vector<double>{4, 5, 6, 7, 16, 17, 18, 19});
    }
  }

  TEST_CASE("split and stack carry gradients back to each input") {
    NDArray x = nd::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
    NDArray y = nd::from_vector(std::vector<double>{7, 8, 9, 10, 11, 12}, {2, 3});
    x.attach_grad();
    y.attach_grad();
    {
      auto recording = autograd::record();
      const std::vector<NDArray> parts = nd::split(nd::stack({x, y}, 2), 2, 2);
      nd::sum(parts[0] * 3.0 + parts[1] * 5.0).backward();
    }
    CHECK(values_of(x.grad()) == std::vector<double>(6, 3.0));
    CHECK(values_of(y.grad()) == std::vector<double>(6, 5.0));
  }

  TEST_CASE("bad input to clip, stack and split is named in the error") {
    check_error([] { nd::clip(nd::ones({2}), 3, 1); }, {"clip", "3", "1"});
    check_error([] { nd::clip(NDArray(), 0, 1); }, {"clip"});
    check_error([] { nd::where(nd::ones({2}), nd::ones({2}), nd::ones({2}, nd::float64)); },
                {"where", "float32", "float64"});
    check_error([] { nd::where(nd::ones({2}), nd::ones({3}), nd::ones({3})); },
                {"where", "2", "3"});
    check_error([] { nd::where(nd::ones({2}), nd::ones({2}), nd::ones({2}, nd::float32, sim(0))); },
                {"where", "cpu(0)", "sim(0)"});
    check_error([] { nd::where(NDArray(), nd::ones({2}), 0.0); }, {"where"});
    check_error([] { nd::stack({}); }, {"stack", "at least one"});
    check_error(
        [] {
          nd::stack({nd::ones({2, 3}), nd::ones({3, 2})});
        },
        {"stack", "2x3", "3x2", "array 1"});
    check_error(
        [] {
          nd::stack({nd::ones({2}), nd::ones({2}, nd::float64)});
        },
        {"stack", "float32", "float64"});
    check_error(
        [] {
          nd::stack({nd::ones({2}), nd::ones({2}, nd::float32, sim(0))});
        },
        {"stack", "cpu(0)", "sim(0)"});
    check_error([] { nd::stack({nd::ones({2, 3})}, 3); }, {"stack", "axis 3"});
    check_error([] { nd::split(nd::ones({4, 6}), 4, 1); }, {"split", "axis 1", "4x6", "4"});
    check_error([] { nd::split(nd::ones({4, 6}), 0); }, {"split", "axis 0", "0"});
    check_error([] { nd::split(nd::ones({4, 6}), 2, 2); }, {"split", "axis"});
    check_error([] { nd::split(nd::ones(Shape{}), 1); }, {"split", "0-d"});
  }
}

}  // namespace tandem::testing
