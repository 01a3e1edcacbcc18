// nd::take (the take kernel family and its record): values against a naive gather on every test
// device (cpu, sim, cuda when present; null(0) in frontend_null_device_tests), the gradient's
// scatter-add with repeated indices, and bad input named in the error. Its finite-difference
// gradient is in gradient_check_test.cc, its export round trip in export_test.cc.
#include "frontend_test_util.h"
#include "test_devices.h"

namespace tandem::testing {

namespace {

// The naive gather: x of `shape` (row-major values), indices flat, along `axis`.
std::vector<double> reference_take(const std::vector<double>& x, const Shape& shape,
                                   const std::vector<std::int64_t>& indices, int axis) {
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (int i = axis + 1; i < shape.ndim(); ++i) inner *= shape[i];
  const std::int64_t n = shape[axis];
  std::vector<double> out;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t index : indices) {
      const std::int64_t row = index < 0 ? index + n : index;
      for (std::int64_t i = 0; i < inner; ++i)
        out.push_back(x[static_cast<std::size_t>((o * n + row) * inner + i)]);
    }
  }
  return out;
}

std::vector<double> iota_values(std::int64_t n) {
  std::vector<double> values;
  for (std::int64_t i = 0; i < n; ++i) values.push_back(static_cast<double>(i * 3 % 17) - 4.0);
  return values;
}

}  // namespace

TEST_SUITE("frontend.take") {
  TEST_CASE("take matches a naive gather along every axis, dtype and index type, on every device") {
    const Shape shape{3, 4, 5};
    const std::vector<double> host = iota_values(shape.num_elements());
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      for (DType dtype : {nd::float32, nd::float64, nd::int32, nd::int64}) {
        CAPTURE(dtype_name(dtype));
        const NDArray x = nd::from_vector(host, shape, device).astype(dtype);
        for (int axis = -3; axis < 3; ++axis) {
          CAPTURE(axis);
          const int normalized = axis < 0 ? axis + 3 : axis;
          const std::int64_t n = shape[normalized];
          // Repeats, the last entry, and negative indices counting from the end.
          const std::vector<std::int64_t> picks{n - 1, 0, -1, 1, 0, -n};
          for (DType index_dtype : {nd::int32, nd::int64}) {
            const NDArray indices = nd::from_vector(picks, Shape{2, 3}, device).astype(index_dtype);
            const NDArray y = nd::take(x, indices, axis);
            Shape expected;
            for (int i = 0; i < 3; ++i) {
              if (i != normalized) {
                expected.push_back(shape[i]);
              } else {
                expected.push_back(2);
                expected.push_back(3);
              }
            }
            CHECK(y.shape() == expected);
            CHECK(y.dtype() == dtype);
            CHECK(y.device() == device);
            CHECK(y.to_vector<double>() == reference_take(host, shape, picks, normalized));
          }
        }
      }
      // A view input (transposed) and a 0-d index.
      const NDArray m = nd::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}, device);
      const NDArray t = nd::transpose(m, {1, 0});  // 3x2: rows {1,4}, {2,5}, {3,6}
      CHECK(nd::take(t, nd::from_vector(std::vector<std::int64_t>{2, 0}, {2}, device))
                .to_vector<double>() == std::vector<double>{3, 6, 1, 4});
      const NDArray scalar_index = nd::from_vector(std::vector<std::int32_t>{1}, {1}, device);
      CHECK(nd::take(m, scalar_index.reshape(Shape{}), 1).to_vector<double>() ==
            std::vector<double>{2, 5});
      CHECK(nd::take(m, scalar_index.reshape(Shape{}), 1).shape() == Shape{2});
    }
  }

  TEST_CASE("take's gradient adds each output gradient into the row it came from") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      NDArray x = nd::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2}, device);
      x.attach_grad();
      const NDArray indices = nd::from_vector(std::vector<std::int64_t>{2, 0, 2, -1}, {4}, device);
      {
        auto recording = autograd::record();
        const NDArray weights =
            nd::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, device);
        nd::sum(nd::take(x, indices, 0) * weights).backward();
      }
      // Row 2 is taken three times (2, 2, -1): 1+5+7, 2+6+8; row 0 once: 3, 4; row 1 never.
      CHECK(x.grad().to_vector<double>() == std::vector<double>{3, 4, 0, 0, 13, 16});
    }
  }

  TEST_CASE("an index out of range is named with the axis and its size at the sync point") {
    for (Device device : test_devices()) {
      CAPTURE(to_string(device));
      const NDArray x = nd::ones({2, 5}, nd::float32, device);
      const NDArray y =
          nd::take(x, nd::from_vector(std::vector<std::int64_t>{0, 5}, {2}, device), 1);
      check_error([&] { (void)y.to_vector<float>(); }, {"take", "index 5", "axis 1", "size 5"});
      const NDArray z = nd::take(x, nd::from_vector(std::vector<std::int32_t>{-3}, {1}, device), 0);
      check_error([&] { (void)z.to_vector<float>(); }, {"take", "index -3", "axis 0", "size 2"});
      // The engine goes on: a good take afterwards works.
      CHECK(nd::take(x, nd::from_vector(std::vector<std::int64_t>{4}, {1}, device), 1)
                .to_vector<float>() == std::vector<float>{1, 1});
    }
  }

  TEST_CASE("bad input to take is named in the error") {
    const NDArray x = nd::ones({2, 3});
    const NDArray good = nd::from_vector(std::vector<std::int64_t>{0}, {1});
    check_error([&] { nd::take(x, nd::ones({1})); }, {"take", "int32 or int64", "float32"});
    check_error([&] { nd::take(x, good, 2); }, {"take", "axis", "2"});
    check_error([&] { nd::take(x, good, -3); }, {"take", "axis", "-3"});
    check_error([&] { nd::take(nd::ones(Shape{}), good); }, {"take", "0-d"});
    check_error([&] { nd::take(NDArray(), good); }, {"take"});
    check_error([&] { nd::take(x, NDArray()); }, {"take"});
    if (device_count(DeviceKind::sim) > 0) {
      check_error([&] { nd::take(x, nd::from_vector(std::vector<std::int64_t>{0}, {1}, sim(0))); },
                  {"take", "cpu(0)", "sim(0)"});
    }
    check_error(
        [] {
          nd::take(nd::ones({1, 1, 1, 1, 1, 1, 1}), nd::zeros({2, 2, 2}, nd::int64), 0);
        },
        {"take", "dimensions"});
  }
}

}  // namespace tandem::testing
