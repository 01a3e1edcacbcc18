// The network operators' values (their gradients are in gradient_check_test.cc): stable
// softmax and cross entropy, one_hot, accuracy, flatten, reproducible dropout, batch_norm's
// statistics and modes, and the errors for misuse.
#include "frontend_test_util.h"
#include "tandem/profiler.h"

namespace tandem::testing {

namespace ag = tandem::autograd;

TEST_SUITE("frontend.network") {
  TEST_CASE("softmax and log_softmax are stable for large logits") {
    for (Device device : {cpu(), sim(0)}) {
      CAPTURE(to_string(device));
      const NDArray x = nd::array({{1000, 1001, 1002}, {-1000, -1000, -1000}}, device);
      const auto p = nd::softmax(x).to_vector<double>();
      const double e1 = std::exp(-1.0), e2 = std::exp(-2.0), total = 1 + e1 + e2;
      CHECK(p[2] == doctest::Approx(1 / total));
      CHECK(p[0] == doctest::Approx(e2 / total));
      CHECK(p[4] == doctest::Approx(1.0 / 3));
      const auto lp = nd::log_softmax(x).to_vector<double>();
      CHECK(lp[2] == doctest::Approx(-std::log(total)));
      CHECK(lp[3] == doctest::Approx(-std::log(3.0)));
      // Along axis 0.
      const auto columns = nd::softmax(x, 0).to_vector<double>();
      CHECK(columns[0] == doctest::Approx(1.0));
      CHECK(columns[3] == doctest::Approx(0.0));
    }
  }

  TEST_CASE("softmax_cross_entropy is -log softmax at the label, finite for any logits") {
    for (Device device : {cpu(), sim(0)}) {
      CAPTURE(to_string(device));
      const NDArray logits = nd::array({{0, 0, 0}, {5000, 0, -5000}}, device);
      const NDArray labels = nd::from_vector(std::vector<std::int32_t>{1, 2}, device);
      const auto loss = nd::softmax_cross_entropy(logits, labels).to_vector<double>();
      CHECK(loss[0] == doctest::Approx(std::log(3.0)));
      CHECK(loss[1] == doctest::Approx(10000.0));
      const NDArray int64_labels = nd::from_vector(std::vector<std::int64_t>{1, 2}, device);
      CHECK(nd::softmax_cross_entropy(logits, int64_labels).to_vector<double>() == loss);
      // int64 labels beyond int32's range are out of range (ignored: loss 0, gradient 0), not
      // wrapped onto class 1 or 2.
      NDArray x = logits.copy();
      x.attach_grad();
      const NDArray huge = nd::from_vector(
          std::vector<std::int64_t>{(std::int64_t{1} << 32) + 1, -(std::int64_t{1} << 32) + 2},
          device);
      NDArray huge_loss, total;
      {
        auto recording = ag::record();
        huge_loss = nd::softmax_cross_entropy(x, huge);
        total = huge_loss.sum();
      }
      total.backward();
      CHECK(huge_loss.to_vector<double>() == std::vector<double>{0, 0});
      for (double g : x.grad().to_vector<double>()) CHECK(g == 0.0);
    }
  }

  TEST_CASE("the fused last-axis softmax ops match the composed path, values and gradients") {
    // float32 arrays: the fused and composed forms round differently.
    for (Device device : {cpu(), sim(0)}) {
      CAPTURE(to_string(device));
      const NDArray x =
          nd::array({{0.5, -1.0, 2.0, 0.25}, {3.0, 3.0, -2.0, 1.0}, {-4.0, 0.0, 1.0, 2.0}}, device);
      const NDArray dy =
          nd::array({{1.0, -2.0, 0.5, 0.0}, {0.25, 1.0, -1.0, 2.0}, {1.0, 1.0, 1.0, -3.0}}, device);
      for (bool log : {false, true}) {
        CAPTURE(log);
        const auto op = [log](const NDArray& a, int axis) {
          return log ? nd::log_softmax(a, axis) : nd::softmax(a, axis);
        };
        // Fused: last axis; composed: axis 0 of the transpose.
        NDArray fused_x = x.copy(), composed_x = x.T().copy();
        fused_x.attach_grad();
        composed_x.attach_grad();
        NDArray fused, composed;
        {
          auto recording = ag::record();
          fused = op(fused_x, -1);
          nd::sum(fused * dy).backward();
        }
        {
          auto recording = ag::record();
          composed = op(composed_x, 0);
          nd::sum(composed * dy.T()).backward();
        }
        const auto f = fused.to_vector<double>(), c = composed.T().copy().to_vector<double>();
        const auto fg = fused_x.grad().to_vector<double>();
        const auto cg = composed_x.grad().T().copy().to_vector<double>();
        for (std::size_t i = 0; i < f.size(); ++i) {
          CHECK(f[i] == doctest::Approx(c[i]).epsilon(1e-5));
          CHECK(fg[i] == doctest::Approx(cg[i]).epsilon(1e-5));
        }
      }
      // Cross entropy against the composed formula, an out-of-range label included (ignored:
      // loss 0 and gradient 0; issue 27 found the gradient was the softmax, which trained the
      // row).
      NDArray logits = x.copy();
      logits.attach_grad();
      const NDArray labels = nd::from_vector(std::vector<std::int32_t>{2, 0, 7}, device);
      NDArray loss;
      {
        auto recording = ag::record();
        loss = nd::softmax_cross_entropy(logits, labels);
        nd::sum(loss * nd::array({1.0, -0.5, 2.0}, device)).backward();
      }
      const auto ref_lp = nd::log_softmax(x.T().copy(), 0).T().copy().to_vector<double>();
      const auto l = loss.to_vector<double>();
      CHECK(l[0] == doctest::Approx(-ref_lp[2]).epsilon(1e-5));
      CHECK(l[1] == doctest::Approx(-ref_lp[4]).epsilon(1e-5));
      CHECK(l[2] == 0.0);
      const auto g = logits.grad().to_vector<double>();
      const double head[3] = {1.0, -0.5, 2.0};
      const int label[3] = {2, 0, 7};
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 4; ++c) {
          const bool ignored = label[r] >= 4;
          const double expected =
              ignored ? 0.0 : head[r] * (std::exp(ref_lp[r * 4 + c]) - (c == label[r] ? 1.0 : 0.0));
          CHECK(g[r * 4 + c] == doctest::Approx(expected).epsilon(1e-5));
        }
      }
    }
  }

  TEST_CASE("linear is one op with the bits of dot(x, w.T()) + b, values and gradients") {
    std::mt19937_64 rng(29);
    std::vector<Device> devices{cpu()};
    if (device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
    for (Device device : devices) {
      CAPTURE(to_string(device));
      for (DType dtype : {nd::float32, nd::float64}) {
        CAPTURE(dtype_name(dtype));
        const auto make = [&](const Shape& shape) {
          return to_array(random_host(shape, rng), dtype).copyto(device);
        };
        // Dense operands, then a transposed x and a transposed weight (strided views).
        const NDArray x = make({5, 7}), w = make({3, 7}), b = make({3}), r = make({5, 3});
        const NDArray xt = make({7, 5}).T(), wt = make({7, 3}).T();
        for (const auto& [xs, ws] : {std::pair{x, w}, std::pair{xt, wt}}) {
          CHECK(nd::linear(xs, ws, b).to_vector<double>() ==
                (nd::dot(xs, ws.T()) + b).to_vector<double>());
        }
        CHECK(nd::linear(x, w, NDArray()).to_vector<double>() ==
              nd::dot(x, w.T()).to_vector<double>());
        // One op.
        nd::waitall();
        profiler::clear();
        profiler::start();
        const NDArray y = nd::linear(x, w, b);
        nd::waitall();
        profiler::stop();
        const auto stats = profiler::op_stats(profiler::events());
        REQUIRE(stats.size() == 1);
        CHECK(std::string(stats[0].name) == "linear");
        CHECK(y.shape() == Shape{5, 3});
        // Gradients, into fresh buffers (write) and accumulated (add, two backward passes).
        for (const ag::GradReq req : {ag::GradReq::write, ag::GradReq::add}) {
          CAPTURE(static_cast<int>(req));
          NDArray fx = x.copy(), fw = w.copy(), fb = b.copy();
          NDArray ux = x.copy(), uw = w.copy(), ub = b.copy();
          for (NDArray* a : {&fx, &fw, &fb, &ux, &uw, &ub}) a->attach_grad(req);
          for (int pass = 0; pass < (req == ag::GradReq::add ? 2 : 1); ++pass) {
            {
              auto recording = ag::record();
              nd::sum(nd::linear(fx, fw, fb) * r).backward();
            }
            {
              auto recording = ag::record();
              nd::sum((nd::dot(ux, uw.T()) + ub) * r).backward();
            }
          }
          CHECK(fx.grad().to_vector<double>() == ux.grad().to_vector<double>());
          CHECK(fw.grad().to_vector<double>() == uw.grad().to_vector<double>());
          CHECK(fb.grad().to_vector<double>() == ub.grad().to_vector<double>());
        }
      }
    }
    // Errors name the op and the shapes.
    const NDArray x = nd::ones({4, 3}), w = nd::ones({2, 3}), b = nd::ones({2});
    CHECK(contains(error_of([&] { nd::linear(x, nd::ones({2, 4}), b); }), "linear"));
    CHECK(contains(error_of([&] { nd::linear(x, w, nd::ones({3})); }), "2x3"));
    CHECK(contains(error_of([&] { nd::linear(x, w, nd::ones({2}, nd::float64)); }), "float64"));
    CHECK(contains(error_of([&] { nd::linear(nd::ones({4}), w, b); }), "N x K"));
    if (device_count(DeviceKind::sim) > 0) {
      CHECK(contains(error_of([&] { nd::linear(x, w, b.copyto(sim(0))); }), "different devices"));
    }
  }

  TEST_CASE("one_hot, accuracy and flatten") {
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{2, 0, 1, 7});
    CHECK(nd::one_hot(labels, 3).shape() == Shape{4, 3});
    CHECK(nd::one_hot(labels, 3).to_vector<int>() ==
          std::vector<int>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0});
    CHECK(nd::one_hot(labels, 3, nd::int32).dtype() == nd::int32);
    const NDArray logits = nd::array({{0, 1, 5}, {3, 1, 0}, {0, 0, 1}, {1, 0, 0}});
    const NDArray accuracy = nd::accuracy(logits, labels);
    CHECK(accuracy.ndim() == 0);
    CHECK(accuracy.dtype() == nd::float32);
    CHECK(accuracy.scalar() == doctest::Approx(0.5));
    CHECK(nd::accuracy(logits.copyto(sim(0)), labels.copyto(sim(0))).scalar() ==
          doctest::Approx(0.5));
    const NDArray image = nd::ones({2, 3, 4, 5});
    CHECK(nd::flatten(image).shape() == Shape{2, 60});
    CHECK(nd::flatten(image).shares_storage_with(image));
    CHECK(nd::flatten(nd::ones({3})).shape() == Shape{3, 1});
  }

  TEST_CASE("dropout: reproducible mask from its seed, scaled, identity when not training") {
    const NDArray x = nd::ones({1000});
    CHECK(nd::dropout(x, 0.5, 1).shares_storage_with(x));  // predict mode: x itself
    auto mode = ag::train_mode();
    const auto a = nd::dropout(x, 0.3, 42).to_vector<double>();
    const auto b = nd::dropout(x.copyto(sim(0)), 0.3, 42).to_vector<double>();
    const auto c = nd::dropout(x, 0.3, 43).to_vector<double>();
    CHECK(a == b);
    CHECK(a != c);
    int kept = 0;
    for (double v : a) {
      CHECK((v == 0.0 || v == doctest::Approx(1 / 0.7)));
      kept += v != 0.0 ? 1 : 0;
    }
    CHECK(kept > 620);
    CHECK(kept < 780);
    CHECK(contains(error_of([&] { (void)nd::dropout(x, 1.0, 1); }), "p must be in [0, 1)"));
  }

  TEST_CASE("batch_norm: batch statistics and running averages in training, running in predict") {
    for (Device device : {cpu(), sim(0)}) {
      CAPTURE(to_string(device));
      // 2 samples x 2 channels x 2 positions.
      const NDArray x = nd::array({{1, 3, 10, 10}, {5, 7, 20, 40}}, device).reshape({2, 2, 2});
      const NDArray gamma = nd::array({1, 2}, device), beta = nd::array({0, 1}, device);
      NDArray running_mean = nd::zeros({2}, device), running_var = nd::ones({2}, device);
      NDArray y;
      {
        auto mode = ag::train_mode();
        y = nd::batch_norm(x, gamma, beta, running_mean, running_var, 0.9, 1e-5);
      }
      // Channel 0: 1 3 5 7 (mean 4, variance 5); channel 1: 10 10 20 40 (mean 20, variance 150).
      const auto v = y.to_vector<double>();
      CHECK(v[0] == doctest::Approx(-3 / std::sqrt(5 + 1e-5)));
      CHECK(v[2] == doctest::Approx(2 * -10 / std::sqrt(150 + 1e-5) + 1));
      CHECK(running_mean.to_vector<double>()[0] == doctest::Approx(0.4));
      CHECK(running_mean.to_vector<double>()[1] == doctest::Approx(2.0));
      CHECK(running_var.to_vector<double>()[1] == doctest::Approx(0.9 + 15.0));
      // Predict mode: the running statistics, nothing updated.
      const auto p = nd::batch_norm(x, gamma, beta, running_mean, running_var).to_vector<double>();
      CHECK(p[0] == doctest::Approx((1 - 0.4) / std::sqrt(0.9 + 0.5 + 1e-5)));
      CHECK(running_mean.to_vector<double>()[0] == doctest::Approx(0.4));
    }
  }

  TEST_CASE("batch_norm updates attached running statistics while recording") {
    NDArray x = nd::random::uniform({4, 3});
    x.attach_grad();
    NDArray gamma = nd::ones({3}), beta = nd::zeros({3});
    NDArray running_mean = nd::zeros({3}), running_var = nd::ones({3});
    gamma.attach_grad();
    running_mean.attach_grad(ag::GradReq::null);
    auto scope = ag::record();
    NDArray y = nd::batch_norm(x, gamma, beta, running_mean, running_var);
    nd::sum(y * y).backward();
    CHECK(running_mean.to_vector<double>()[0] != 0.0);
    CHECK(gamma.grad().to_vector<double>()[0] == doctest::Approx(8.0).epsilon(1e-3));
  }

  TEST_CASE("network operators name what is wrong") {
    const NDArray logits = nd::ones({4, 3});
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 0});
    CHECK(contains(error_of([&] { (void)nd::softmax_cross_entropy(logits, nd::ones({4})); }),
                   "labels must be integer"));
    CHECK(contains(error_of([&] { (void)nd::softmax_cross_entropy(logits, labels.slice(0, 2)); }),
                   "N x C and labels of shape N"));
    CHECK(contains(error_of([&] { (void)nd::accuracy(logits, labels.copyto(sim(0))); }),
                   "different devices"));
    CHECK(contains(error_of([&] { (void)nd::one_hot(labels, 0); }), "depth"));
    CHECK(contains(error_of([&] { (void)nd::softmax(nd::ones({2}, nd::int32)); }), "int32"));
    CHECK(contains(error_of([&] {
                     (void)nd::batch_norm(nd::ones({2, 3}), nd::ones({2}), nd::zeros({3}),
                                          nd::zeros({3}), nd::ones({3}));
                   }),
                   "shape 3"));
  }
}

}  // namespace tandem::testing
