// Autograd: recording scopes and modes, gradients delivered with write and add requests,
// head gradients, retain_graph, the misuse errors, and backward as queued engine ops.
#include <future>

#include "frontend_test_util.h"

namespace tandem::testing {

namespace ag = tandem::autograd;

namespace {

std::vector<double> values(const NDArray& x) {
  return x.to_vector<double>();
}

void check_close(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]));
}

}  // namespace

TEST_SUITE("frontend.autograd") {
  TEST_CASE("record and pause set the thread's recording and training flags") {
    CHECK_FALSE(ag::is_recording());
    CHECK_FALSE(ag::is_training());
    {
      auto scope = ag::record();
      CHECK(ag::is_recording());
      CHECK(ag::is_training());
      {
        auto paused = ag::pause();
        CHECK_FALSE(ag::is_recording());
        CHECK_FALSE(ag::is_training());
      }
      CHECK(ag::is_recording());
      {
        auto predict = ag::predict_mode();
        CHECK(ag::is_recording());
        CHECK_FALSE(ag::is_training());
      }
    }
    {
      auto scope = ag::record(false);
      CHECK(ag::is_recording());
      CHECK_FALSE(ag::is_training());
    }
    CHECK_FALSE(ag::is_recording());
    // Another thread has its own state.
    auto scope = ag::record();
    CHECK_FALSE(std::async(std::launch::async, [] { return ag::is_recording(); }).get());
  }

  TEST_CASE("backward of a scalar writes the gradient of every attached array") {
    NDArray x = nd::array({1, 2, 3});
    NDArray w = nd::array({4, 5, 6});
    x.attach_grad();
    w.attach_grad();
    CHECK(values(x.grad()) == std::vector<double>{0, 0, 0});
    {
      auto scope = ag::record();
      NDArray y = nd::sum(x * w + nd::square(x));
      CHECK(y.needs_grad());
      y.backward();
    }
    check_close(values(x.grad()), {4 + 2, 5 + 4, 6 + 6});
    check_close(values(w.grad()), {1, 2, 3});
  }

  TEST_CASE("ops outside a record scope or on arrays without attach_grad are not recorded") {
    NDArray x = nd::array({1, 2});
    x.attach_grad();
    NDArray outside = x * 2;
    CHECK_FALSE(outside.needs_grad());
    auto scope = ag::record();
    NDArray plain = nd::array({1, 2}) * 2;
    CHECK_FALSE(plain.needs_grad());
    CHECK((x * 2).needs_grad());
    CHECK_FALSE((x * 2).detach().needs_grad());
    CHECK_FALSE(nd::argmax(x).needs_grad());
    CHECK_FALSE((x > 1.0).needs_grad());
    {
      auto paused = ag::pause();
      CHECK_FALSE((x * 2).needs_grad());
    }
  }

  TEST_CASE("grad_req write overwrites and add accumulates over backward calls") {
    NDArray a = nd::array({1, 2});
    NDArray b = nd::array({1, 2});
    a.attach_grad(ag::GradReq::write);
    b.attach_grad(ag::GradReq::add);
    for (int step = 0; step < 3; ++step) {
      auto scope = ag::record();
      nd::sum(a * 3 + b * 3).backward();
    }
    check_close(values(a.grad()), {3, 3});
    check_close(values(b.grad()), {9, 9});
    NDArray c = nd::array({1, 2});
    c.attach_grad(ag::GradReq::null);
    CHECK_FALSE(c.needs_grad());
    CHECK(contains(error_of([&] { (void)c.grad(); }), "GradReq::null"));
  }

  TEST_CASE("an array used twice gets the sum of both gradients") {
    NDArray x = nd::array({2, 3});
    x.attach_grad();
    {
      auto scope = ag::record();
      NDArray y = x * x;  // dy/dx = 2x
      NDArray z = nd::sum(y + x * 4 + y);
      z.backward();
    }
    check_close(values(x.grad()), {4 * 2 + 4, 4 * 3 + 4});
  }

  TEST_CASE("a head gradient weighs a non-scalar head; several heads add up") {
    NDArray x = nd::array({1, 2, 3});
    x.attach_grad();
    {
      auto scope = ag::record();
      NDArray y = x * x;
      y.backward(nd::array({1, 10, 100}));
    }
    check_close(values(x.grad()), {2, 40, 600});
    {
      auto scope = ag::record();
      NDArray y1 = nd::sum(x * 2);
      NDArray y2 = x * 3;
      ag::backward({y1, y2}, {NDArray(), nd::array({1, 1, 2})});
    }
    check_close(values(x.grad()), {5, 5, 8});
  }

  TEST_CASE("retain_graph keeps the graph for a second backward") {
    NDArray x = nd::array({1, 2});
    x.attach_grad(ag::GradReq::add);
    auto scope = ag::record();
    NDArray y = nd::sum(nd::exp(x));
    y.backward({}, true);
    y.backward();
    check_close(values(x.grad()), {2 * std::exp(1.0), 2 * std::exp(2.0)});
    const std::string third = error_of([&] { y.backward(); });
    CHECK(contains(third, "released by an earlier backward"));
    CHECK(contains(third, "retain_graph"));
  }

  TEST_CASE("detach cuts the graph; attach_grad on a recorded output makes it a leaf") {
    NDArray x = nd::array({1, 2});
    x.attach_grad();
    auto scope = ag::record();
    NDArray y = x * 3;
    NDArray z = nd::sum(y.detach() * x);  // d/dx with y constant: y
    z.backward();
    check_close(values(x.grad()), {3, 6});
    NDArray h = x * 5;
    h.attach_grad();
    nd::sum(h * h).backward();
    check_close(values(h.grad()), {10, 20});
    check_close(values(x.grad()), {3, 6});  // not reached: unchanged
  }

  TEST_CASE("misuse gives a clear error") {
    NDArray x = nd::array({1, 2, 3});
    NDArray never = nd::array({1, 2});
    CHECK(contains(error_of([&] { (void)never.grad(); }), "attach_grad"));
    CHECK(contains(error_of([&] { nd::arange(0, 3, 1, nd::int32).attach_grad(); }),
                   "floating-point"));
    x.attach_grad();
    auto scope = ag::record();
    NDArray y = x * 2;
    CHECK(contains(error_of([&] { y.backward(); }), "one-element head"));
    CHECK(contains(error_of([&] { y.backward(nd::ones({2})); }), "must match the head"));
    CHECK(contains(error_of([&] { nd::sum(never).backward(); }), "does not depend"));
    // In-place writes into the recorded graph, or of recorded values, while recording.
    CHECK(contains(error_of([&] { y += 1.0; }), "in place"));
    CHECK(contains(error_of([&] { x.assign(nd::zeros({3})); }), "in place"));
    CHECK(contains(error_of([&] { y.slice(0, 1).assign(1.0); }), "in place"));
    NDArray target = nd::zeros({3});
    CHECK(contains(error_of([&] { target += y; }), "needs a gradient"));
    CHECK(contains(error_of([&] { y.copyto(target); }), "needs a gradient"));
    CHECK_NOTHROW(target += y.detach());
  }

  TEST_CASE("backward refuses an input that was written in place after it was saved") {
    NDArray w = nd::array({1, 2});
    w.attach_grad();
    NDArray data = nd::array({3, 4});
    NDArray loss;
    {
      auto scope = ag::record();
      loss = nd::sum(data * w);  // saves data for w's gradient
    }
    data += 1.0;
    CHECK(contains(error_of([&] { loss.backward(); }), "written in place"));
  }

  TEST_CASE("gradients cross devices back through copyto") {
    const Device device = sim(0);
    NDArray x = nd::array({1, 2, 3});
    x.attach_grad();
    {
      auto scope = ag::record();
      NDArray on_device = x.copyto(device);
      NDArray y = nd::sum(nd::square(on_device)).copyto(cpu());
      y.backward();
    }
    CHECK(x.grad().device() == cpu());
    check_close(values(x.grad()), {2, 4, 6});
    // A head gradient on another device than the head is an error.
    auto scope = ag::record();
    NDArray y = x.copyto(device) * 2;
    CHECK(contains(error_of([&] { y.backward(nd::ones({3})); }), "must match the head"));
  }

  TEST_CASE("the gradient of the norm of zeros is zero, not NaN") {
    NDArray x = nd::zeros({2, 3});
    x.attach_grad();
    {
      auto scope = ag::record();
      nd::sum(nd::norm(x, 1) + nd::norm(x)).backward();
    }
    CHECK(values(x.grad()) == std::vector<double>(6, 0.0));
  }

  TEST_CASE("astype sends the gradient back in the input's dtype") {
    NDArray x = nd::array({1, 2});  // float32
    x.attach_grad();
    {
      auto scope = ag::record();
      NDArray y = nd::sum(nd::square(x.astype(nd::float64)));
      CHECK(y.dtype() == nd::float64);
      y.backward();
    }
    CHECK(x.grad().dtype() == nd::float32);
    check_close(values(x.grad()), {2, 4});
    // To an integer dtype: no gradient path.
    auto scope = ag::record();
    CHECK_FALSE(x.astype(nd::int32).needs_grad());
  }

  TEST_CASE("gradients from several devices add up on the leaf's device") {
    NDArray x = nd::array({1, 2});
    x.attach_grad();
    {
      auto scope = ag::record();
      NDArray on_sim = x.as_in_context(sim(0)) * 3;
      NDArray loss = nd::sum(on_sim).copyto(cpu()) + nd::sum(x * x);
      loss.backward();
    }
    check_close(values(x.grad()), {3 + 2, 3 + 4});
    CHECK(x.as_in_context(cpu()).needs_grad());  // the very handle: same history
  }

  TEST_CASE("backward pushes its ops and returns without waiting for them") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    {
      nd::EngineScope engine_scope(*engine);
      NDArray x = nd::ones({64, 64});
      NDArray w = nd::ones({64, 64});
      w.attach_grad();
      x.wait_to_read();
      w.grad().wait_to_read();
      // A gate op writes x: nothing that reads x can run until the gate opens.
      Gate gate(*engine, {x.var()});
      const EngineStats before = engine->stats();
      NDArray accuracy;
      {
        auto scope = ag::record();
        const NDArray labels = nd::from_vector(std::vector<std::int32_t>(64, 3));
        NDArray h = nd::dropout(nd::relu(nd::dot(x, w)), 0.5, 1);
        h = nd::batch_norm(h, nd::ones({64}), nd::zeros({64}), nd::zeros({64}), nd::ones({64}));
        const NDArray logits = nd::log_softmax(nd::softmax(h));
        NDArray loss = nd::mean(nd::softmax_cross_entropy(logits, labels));
        accuracy = nd::accuracy(logits, labels);
        loss.backward();
      }
      // Every op of the forward and backward pass reads x, directly or not: reaching this line
      // with the gate closed shows that neither the recording nor backward waited for one.
      const EngineStats after = engine->stats();
      CHECK(after.ops_pushed - before.ops_pushed >= 40);
      CHECK(after.ops_in_flight >= 30);
      gate.open();
      CHECK(std::isfinite(values(w.grad())[0]));
      CHECK(accuracy.scalar() >= 0.0);
    }
    engine->wait_all();
  }

  TEST_CASE("saved arrays are freed once backward has pushed the ops that read them") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    nd::EngineScope engine_scope(*engine);
    NDArray w = nd::ones({32, 32});
    w.attach_grad();
    const NDArray x = nd::ones({32, 32});
    engine->wait_all();
    const std::uint64_t vars = engine->stats().vars_alive;
    NDArray loss;
    {
      auto scope = ag::record();
      loss = nd::sum(nd::tanh(nd::dot(x, w)));
    }
    engine->wait_all();
    // Alive: the loss and tanh's result (its gradient reads it); dot's result is already gone
    // (no rule reads it).
    CHECK(engine->stats().vars_alive == vars + 2);
    loss.backward();
    loss = NDArray();
    engine->wait_all();
    CHECK(engine->stats().vars_alive == vars);
  }

  TEST_CASE("the user guide's training loop learns") {
    // A linear classifier of 4 separable classes, as in docs/user-guide.md.
    nd::random::seed(5);
    const NDArray centers = nd::array({{2, 0}, {0, 2}, {-2, 0}, {0, -2}});
    std::vector<std::int32_t> label_values;
    for (int i = 0; i < 64; ++i) label_values.push_back(i % 4);
    const NDArray y = nd::from_vector(label_values);
    NDArray x = nd::random::normal({64, 2}, {.stddev = 0.3});
    for (int i = 0; i < 64; ++i) x[i] += centers[i % 4];
    auto w = nd::random::normal({2, 4}, {.stddev = 0.01});
    auto b = nd::zeros({4});
    w.attach_grad();
    b.attach_grad();
    for (int step = 0; step < 50; ++step) {
      {
        auto scope = ag::record();
        auto logits = nd::dot(nd::flatten(x), w) + b;
        auto loss = nd::mean(nd::softmax_cross_entropy(logits, y));
        loss.backward();
      }
      w -= 0.5 * w.grad();
      b -= 0.5 * b.grad();
    }
    CHECK(nd::accuracy(nd::dot(x, w) + b, y).scalar() >= 0.95);
  }

  TEST_CASE("an attached array with GradReq::null may be written in place while recording") {
    NDArray stats = nd::zeros({2});
    stats.attach_grad(ag::GradReq::null);
    auto scope = ag::record();
    CHECK_NOTHROW(stats += 1.0);
    CHECK(stats.to_vector<double>() == std::vector<double>{1, 1});
  }

  TEST_CASE("a long recorded chain is released without deep recursion") {
    NDArray x = nd::array({1});
    x.attach_grad();
    NDArray y = x;
    {
      auto scope = ag::record();
      for (int i = 0; i < 200000; ++i) y = y + 1.0;
    }
    CHECK(y.needs_grad());
    y = NDArray();  // drops 200000 nodes
    nd::waitall();
  }

  TEST_CASE("record_op gives an op of one's own a gradient") {
    NDArray x = nd::array({1, 2, 3});
    x.attach_grad();
    auto scope = ag::record();
    NDArray y;
    {
      auto paused = ag::pause();
      y = x * x * x;  // cube, computed without recording
    }
    CHECK_FALSE(y.needs_grad());
    ag::record_op("cube", {x}, {&y}, [x = x.detach()](const std::vector<NDArray>& g) {
      return std::vector<NDArray>{g[0] * x * x * 3};
    });
    CHECK(y.needs_grad());
    nd::sum(y).backward();
    check_close(values(x.grad()), {3, 12, 27});
    // A rule returning a wrong shape is named in the error.
    NDArray z = x * 1;
    ag::record_op("bad", {x}, {&z},
                  [](const std::vector<NDArray>&) { return std::vector<NDArray>{nd::ones({2})}; });
    CHECK(contains(error_of([&] { nd::sum(z).backward(); }), "'bad'"));
  }
}

TEST_SUITE("frontend.autograd_grad") {
  TEST_CASE("grad returns what backward would write, and writes no buffer and calls no hook") {
    const NDArray x = nd::from_vector(std::vector<double>{1, 2, 3}, {3});
    NDArray w = nd::from_vector(std::vector<double>{0.5, -1, 2}, {3});
    NDArray b = nd::from_vector(std::vector<double>{1}, {1});
    w.attach_grad();
    b.attach_grad(ag::GradReq::add);
    int hook_calls = 0;
    ag::add_gradient_ready_hook(w, [&](const NDArray&) { ++hook_calls; });
    NDArray loss;
    {
      auto scope = ag::record();
      loss = nd::sum(nd::square(x * w + b));
    }
    const std::vector<NDArray> grads = ag::grad({loss}, {w, b}, {}, true);
    REQUIRE(grads.size() == 2);
    // d/dw = 2 (x w + b) x = 2 * (1.5, -1, 7) * (1, 2, 3); d/db = 2 * sum(x w + b).
    check_close(values(grads[0]), {3, -4, 42});
    check_close(values(grads[1]), {15});
    CHECK(values(w.grad()) == std::vector<double>{0, 0, 0});
    CHECK(values(b.grad()) == std::vector<double>{0});
    CHECK(hook_calls == 0);
    loss.backward();  // the graph was retained: backward still works and agrees
    CHECK(values(w.grad()) == values(grads[0]));
    CHECK(hook_calls == 1);
  }

  TEST_CASE("grad with respect to an intermediate, and a variable the heads do not reach") {
    NDArray x = nd::from_vector(std::vector<double>{1, -2}, {2});
    NDArray unused = nd::ones({2}, nd::float64);
    x.attach_grad();
    unused.attach_grad();
    NDArray hidden, loss;
    {
      auto scope = ag::record();
      hidden = x * 3;
      loss = nd::sum(hidden * hidden);
    }
    const std::vector<NDArray> grads = ag::grad({loss}, {hidden, unused, x});
    check_close(values(grads[0]), {6, -12});  // 2 * hidden
    CHECK_FALSE(grads[1].defined());
    check_close(values(grads[2]), {18, -36});  // 2 * hidden * 3
    // Without retain_graph the walked part is released.
    CHECK(contains(error_of([&] { ag::grad({loss}, {x}); }), "retain_graph"));
  }

  TEST_CASE("grad with head gradients and several heads") {
    NDArray x = nd::from_vector(std::vector<double>{1, 2}, {2});
    x.attach_grad();
    NDArray y, z;
    {
      auto scope = ag::record();
      y = x * x;
      z = x * 10;
    }
    const NDArray dy = nd::from_vector(std::vector<double>{1, -1}, {2});
    const NDArray dz = nd::from_vector(std::vector<double>{0.5, 0.5}, {2});
    check_close(values(ag::grad({y, z}, {x}, {dy, dz})[0]), {2 + 5, -4 + 5});
  }

  TEST_CASE("grad refuses variables without a gradient and the head mistakes of backward") {
    NDArray x = nd::ones({2}, nd::float64);
    x.attach_grad();
    NDArray frozen = nd::ones({2}, nd::float64);
    frozen.attach_grad(ag::GradReq::null);
    const NDArray plain = nd::ones({2}, nd::float64);
    NDArray loss;
    {
      auto scope = ag::record();
      loss = nd::sum(x * frozen * plain);
    }
    const std::string not_needed = error_of([&] { ag::grad({loss}, {plain}, {}, true); });
    CHECK(contains(not_needed, "autograd::grad"));
    CHECK(contains(not_needed, "variable 0"));
    CHECK(contains(error_of([&] { ag::grad({loss}, {x, frozen}, {}, true); }), "variable 1"));
    CHECK(contains(error_of([&] { ag::grad({plain}, {x}); }), "does not depend"));
    CHECK(contains(error_of([&] { ag::grad({}, {x}); }), "no heads"));
    CHECK(contains(error_of([&] { ag::grad({loss}, {NDArray()}); }), "grad"));
    CHECK(contains(error_of([&] { ag::grad({x * 2}, {x}); }), "does not depend"));
  }
}

}  // namespace tandem::testing
