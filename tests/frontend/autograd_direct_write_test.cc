// Direct writes of gradients: backward lets dot's gradient rule form a weight gradient inside the
// leaf's gradient buffer (overwriting it, or accumulating into it for GradReq::add) when that
// gradient is the only one the leaf gets, directly or through a transposed view (Dense's w.T()).
// The values must be those of the ordinary path, the buffer's hooks must see the final value,
// and a leaf or view read more than once must still get the sum of its gradients.
#include <memory>

#include "frontend_test_util.h"

namespace tandem::testing {

namespace ag = tandem::autograd;

namespace {

std::vector<double> values(const NDArray& x) {
  return x.to_vector<double>();
}

// Small integers: every product and sum below is exact in float32, so the direct and the
// ordinary paths must agree exactly.
NDArray matrix(std::int64_t rows, std::int64_t cols, int seed, Device device) {
  std::vector<float> data(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>((static_cast<int>(i) * 7 + seed * 3) % 5 - 2);
  return nd::from_vector(data, Shape{rows, cols}).copyto(device);
}

// On the host: (a^T . b) for a (m x p) and b (m x q), as a p x q row-major vector.
std::vector<double> at_b(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                         std::int64_t p, std::int64_t q) {
  std::vector<double> out(static_cast<std::size_t>(p * q), 0.0);
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t i = 0; i < p; ++i)
      for (std::int64_t j = 0; j < q; ++j)
        out[static_cast<std::size_t>(i * q + j)] +=
            a[static_cast<std::size_t>(r * p + i)] * b[static_cast<std::size_t>(r * q + j)];
  return out;
}

std::vector<double> transposed(const std::vector<double>& a, std::int64_t rows, std::int64_t cols) {
  std::vector<double> out(a.size());
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      out[static_cast<std::size_t>(j * rows + i)] = a[static_cast<std::size_t>(i * cols + j)];
  return out;
}

std::vector<double> plus(std::vector<double> a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

constexpr std::int64_t kRows = 6, kIn = 4, kOut = 3;

// loss = sum(dot(x, w^T) * c) for w (kOut x kIn) used through w.T() (as Dense does) or, with
// `plain`, w (kIn x kOut) used as it is. The gradient of w: c^T . x, or x^T . c.
NDArray dense_loss(const NDArray& x, const NDArray& w, const NDArray& c, bool plain) {
  return nd::sum(nd::dot(x, plain ? w : w.T()) * c);
}

std::vector<double> expected_weight_gradient(const NDArray& x, const NDArray& c, bool plain) {
  return plain ? at_b(values(x), values(c), kRows, kIn, kOut)
               : at_b(values(c), values(x), kRows, kOut, kIn);
}

// What the gradient-ready hook of an attached array saw: how often it ran, and a copy of the
// gradient it was given (queued after the write it signals, so it holds the final value).
struct HookCalls {
  int calls = 0;
  NDArray seen;
};
void watch(const NDArray& attached, const std::shared_ptr<HookCalls>& hook) {
  ag::add_gradient_ready_hook(attached, [hook](const NDArray& gradient) {
    ++hook->calls;
    hook->seen = gradient.copy();
  });
}

std::uint64_t ops_pushed() {
  return nd::current_engine().stats().ops_pushed;
}

}  // namespace

TEST_SUITE("frontend.autograd_direct_write") {
  TEST_CASE("a weight read once by dot gets its gradient from the product itself") {
    for (const Device device : {cpu(), sim(0)}) {
      for (const bool plain : {false, true}) {
        for (const ag::GradReq request : {ag::GradReq::write, ag::GradReq::add}) {
          CAPTURE(to_string(device));
          CAPTURE(plain);
          CAPTURE(static_cast<int>(request));
          const NDArray x = matrix(kRows, kIn, 1, device);
          const NDArray c = matrix(kRows, kOut, 2, device);
          NDArray w = plain ? matrix(kIn, kOut, 3, device) : matrix(kOut, kIn, 3, device);
          w.attach_grad(request);
          const NDArray before = matrix(w.shape()[0], w.shape()[1], 4, device);
          w.grad().assign(before);
          NDArray loss;
          {
            auto recording = ag::record();
            loss = dense_loss(x, w, c, plain);
          }
          // grad() writes no buffer: its ops are the gradient ops alone. backward() with a
          // direct write adds none (before: one copy or add of the weight gradient).
          const std::uint64_t at_grad = ops_pushed();
          const std::vector<NDArray> returned = ag::grad({loss}, {w}, {}, true);
          const std::uint64_t grad_ops = ops_pushed() - at_grad;
          const std::uint64_t at_backward = ops_pushed();
          loss.backward();
          const std::uint64_t backward_ops = ops_pushed() - at_backward;
          CHECK(backward_ops == grad_ops);
          const std::vector<double> expected = expected_weight_gradient(x, c, plain);
          CHECK(values(returned[0]) == expected);
          CHECK(values(w.grad()) ==
                (request == ag::GradReq::add ? plus(values(before), expected) : expected));
        }
      }
    }
  }

  TEST_CASE("GradReq::add accumulates micro-batches' gradients in the buffer") {
    for (const Device device : {cpu(), sim(0)}) {
      CAPTURE(to_string(device));
      NDArray w = matrix(kOut, kIn, 3, device);
      w.attach_grad(ag::GradReq::add);
      std::vector<double> expected(static_cast<std::size_t>(kOut * kIn), 0.0);
      for (int step = 0; step < 3; ++step) {
        const NDArray x = matrix(kRows, kIn, 10 + step, device);
        const NDArray c = matrix(kRows, kOut, 20 + step, device);
        {
          auto recording = ag::record();
          dense_loss(x, w, c, false).backward();
        }
        expected = plus(expected, expected_weight_gradient(x, c, false));
      }
      CHECK(values(w.grad()) == expected);
    }
  }

  TEST_CASE("a weight read twice gets the sum of both gradients") {
    for (const bool shared_view : {false, true}) {
      CAPTURE(shared_view);
      const NDArray x1 = matrix(kRows, kIn, 1, cpu());
      const NDArray x2 = matrix(kRows, kIn, 5, cpu());
      const NDArray c = matrix(kRows, kOut, 2, cpu());
      NDArray w = matrix(kOut, kIn, 3, cpu());
      w.attach_grad();
      const auto hook = std::make_shared<HookCalls>();
      watch(w, hook);
      {
        auto recording = ag::record();
        // Two transpose nodes reading w, or one transpose read by both products.
        const NDArray t = w.T();
        const NDArray second = shared_view ? t : w.T();
        (nd::sum(nd::dot(x1, t) * c) + nd::sum(nd::dot(x2, second) * c)).backward();
      }
      const std::vector<double> expected =
          plus(expected_weight_gradient(x1, c, false), expected_weight_gradient(x2, c, false));
      CHECK(values(w.grad()) == expected);
      CHECK(hook->calls == 1);
      CHECK(values(hook->seen) == expected);
    }
  }

  TEST_CASE("the hook of a directly written gradient sees its final value") {
    for (const Device device : {cpu(), sim(0)}) {
      CAPTURE(to_string(device));
      const NDArray x = matrix(kRows, kIn, 1, device);
      const NDArray c = matrix(kRows, kOut, 2, device);
      NDArray w = matrix(kOut, kIn, 3, device);
      w.attach_grad(ag::GradReq::add);
      const auto hook = std::make_shared<HookCalls>();
      watch(w, hook);
      {
        auto recording = ag::record();
        dense_loss(x, w, c, false).backward();
      }
      CHECK(hook->calls == 1);
      CHECK(values(hook->seen) == expected_weight_gradient(x, c, false));
    }
  }

  TEST_CASE("retain_graph: a second backward writes (or adds) the gradient again") {
    for (const ag::GradReq request : {ag::GradReq::write, ag::GradReq::add}) {
      CAPTURE(static_cast<int>(request));
      const NDArray x = matrix(kRows, kIn, 1, cpu());
      const NDArray c = matrix(kRows, kOut, 2, cpu());
      NDArray w = matrix(kOut, kIn, 3, cpu());
      w.attach_grad(request);
      NDArray loss;
      {
        auto recording = ag::record();
        loss = dense_loss(x, w, c, false);
      }
      loss.backward(NDArray(), true);
      loss.backward();
      const std::vector<double> once = expected_weight_gradient(x, c, false);
      CHECK(values(w.grad()) == (request == ag::GradReq::add ? plus(once, once) : once));
      // The graph is released now, through the transposed view as well.
      CHECK(contains(error_of([&] { loss.backward(); }), "released"));
    }
  }

  TEST_CASE("the input's gradient and vector products take the ordinary path") {
    // x attached too (its gradient g . w through the transposed w), and 1-D operands.
    NDArray x = matrix(kRows, kIn, 1, cpu());
    const NDArray c = matrix(kRows, kOut, 2, cpu());
    NDArray w = matrix(kOut, kIn, 3, cpu());
    NDArray v = nd::array({1, 2, 3, 4});
    x.attach_grad();
    w.attach_grad();
    v.attach_grad();
    {
      auto recording = ag::record();
      (dense_loss(x, w, c, false) + nd::sum(nd::dot(v, v))).backward();
    }
    CHECK(values(w.grad()) == expected_weight_gradient(x, c, false));
    // d/dx sum((x w^T) * c) = c . w.
    CHECK(values(x.grad()) ==
          at_b(transposed(values(c), kRows, kOut), values(w), kOut, kRows, kIn));
    CHECK(values(v.grad()) == std::vector<double>{2, 4, 6, 8});
  }
}

}  // namespace tandem::testing
