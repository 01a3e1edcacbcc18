// The softmax kernel families of the cpu table against the composed formula (shift by the row
// maximum, exp, sum, log or divide), computed here element by element in double.
#include <doctest/doctest.h>

#include <tandem/ops/kernels.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace ops = tandem::ops;

namespace {

constexpr std::int64_t kRows = 5, kClasses = 7;

std::vector<double> logits() {
  std::vector<double> x(kRows * kClasses);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * double(i)) * 4.0 + (i % 3);
  x[3] = 1000.0;  // large: the shift keeps it finite
  return x;
}

std::vector<double> composed_log_softmax(const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < kRows; ++r) {
    double m = x[r * kClasses];
    for (std::int64_t c = 1; c < kClasses; ++c) m = std::max(m, x[r * kClasses + c]);
    double s = 0;
    for (std::int64_t c = 0; c < kClasses; ++c) s += std::exp(x[r * kClasses + c] - m);
    for (std::int64_t c = 0; c < kClasses; ++c)
      y[r * kClasses + c] = x[r * kClasses + c] - m - std::log(s);
  }
  return y;
}

ops::ArrayView view(std::vector<double>& v, ops::Shape shape) {
  return ops::contiguous_view(v.data(), ops::DType::float64, shape);
}

}  // namespace

TEST_SUITE("ops.softmax") {
  TEST_CASE("softmax_rows and log_softmax match the composed formula") {
    std::vector<double> x = logits(), y(x.size()), log_y(x.size());
    const ops::Kernels& k = ops::host_kernels();
    k.softmax_rows(nullptr, view(x, {kRows, kClasses}), view(y, {kRows, kClasses}), false);
    k.softmax_rows(nullptr, view(x, {kRows, kClasses}), view(log_y, {kRows, kClasses}), true);
    const std::vector<double> ref = composed_log_softmax(x);
    for (std::size_t i = 0; i < x.size(); ++i) {
      CHECK(log_y[i] == doctest::Approx(ref[i]).epsilon(1e-12));
      CHECK(y[i] == doctest::Approx(std::exp(ref[i])).epsilon(1e-12));
    }
  }

  TEST_CASE("softmax_rows_backward matches y * (dy - sum(dy * y)) and dy - exp(y) * sum(dy)") {
    std::vector<double> x = logits(), y(x.size()), log_y(x.size()), dy(x.size()), dx(x.size()),
                        log_dx(x.size());
    for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = std::cos(1.3 * double(i));
    const ops::Kernels& k = ops::host_kernels();
    const ops::Shape shape{kRows, kClasses};
    k.softmax_rows(nullptr, view(x, shape), view(y, shape), false);
    k.softmax_rows(nullptr, view(x, shape), view(log_y, shape), true);
    k.softmax_rows_backward(nullptr, view(y, shape), view(dy, shape), view(dx, shape), false);
    k.softmax_rows_backward(nullptr, view(log_y, shape), view(dy, shape), view(log_dx, shape),
                            true);
    for (std::int64_t r = 0; r < kRows; ++r) {
      double dot = 0, sum = 0;
      for (std::int64_t c = 0; c < kClasses; ++c) {
        dot += dy[r * kClasses + c] * y[r * kClasses + c];
        sum += dy[r * kClasses + c];
      }
      for (std::int64_t c = 0; c < kClasses; ++c) {
        const std::size_t i = r * kClasses + c;
        CHECK(dx[i] == doctest::Approx(y[i] * (dy[i] - dot)).epsilon(1e-12));
        CHECK(log_dx[i] == doctest::Approx(dy[i] - std::exp(log_y[i]) * sum).epsilon(1e-12));
      }
    }
  }

  TEST_CASE("softmax_cross_entropy_rows and its backward match -log_softmax at the label") {
    std::vector<double> x = logits(), loss(kRows), p(x.size()), dx(x.size());
    std::vector<std::int32_t> labels{0, 3, 6, -1, 7};  // the last two are out of range
    std::vector<double> head{1.0, 0.5, -2.0, 3.0, 1.0};
    const ops::Shape shape{kRows, kClasses};
    const auto vl = ops::contiguous_view(labels.data(), ops::DType::int32, ops::Shape{kRows});
    const ops::Kernels& k = ops::host_kernels();
    k.softmax_cross_entropy_rows(nullptr, view(x, shape), vl, view(loss, {kRows}), view(p, shape));
    k.softmax_cross_entropy_backward(nullptr, view(p, shape), vl, view(head, {kRows}),
                                     view(dx, shape));
    const std::vector<double> ref = composed_log_softmax(x);
    for (std::int64_t r = 0; r < kRows; ++r) {
      const std::int32_t label = labels[r];
      const bool in_range = label >= 0 && label < kClasses;
      CHECK(loss[r] == doctest::Approx(in_range ? -ref[r * kClasses + label] : 0.0).epsilon(1e-12));
      for (std::int64_t c = 0; c < kClasses; ++c) {
        const std::size_t i = r * kClasses + c;
        CHECK(p[i] == doctest::Approx(std::exp(ref[i])).epsilon(1e-12));
        // An out-of-range label is ignored: gradient 0, as its loss.
        const double expected =
            in_range ? head[r] * (std::exp(ref[i]) - (c == label ? 1.0 : 0.0)) : 0.0;
        CHECK(dx[i] == doctest::Approx(expected).epsilon(1e-12));
      }
    }
    // Without probabilities, and a broadcast head gradient (stride 0).
    std::vector<double> loss2(kRows);
    k.softmax_cross_entropy_rows(nullptr, view(x, shape), vl, view(loss2, {kRows}),
                                 ops::ArrayView{});
    CHECK(loss2 == loss);
    ops::ArrayView broadcast = view(head, {kRows});
    broadcast.strides[0] = 0;
    k.softmax_cross_entropy_backward(nullptr, view(p, shape), vl, broadcast, view(dx, shape));
    CHECK(dx[kClasses + 2] == doctest::Approx(p[kClasses + 2]).epsilon(1e-12));
  }

  TEST_CASE("float32 rows stay finite for large logits") {
    std::vector<float> x{1e30f, 0.0f, -1e30f, 88.0f, 89.0f, 90.0f}, y(6);
    const ops::Shape shape{2, 3};
    ops::host_kernels().softmax_rows(
        nullptr, ops::contiguous_view(x.data(), ops::DType::float32, shape),
        ops::contiguous_view(y.data(), ops::DType::float32, shape), true);
    for (float v : y) CHECK(std::isfinite(v));
    CHECK(y[0] == 0.0f);
  }
}
