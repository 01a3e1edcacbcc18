// Random programs of differentiable ops, recorded and differentiated on several engines and
// devices: the gradients must be bit-identical on the threaded and the naive engine (the naive
// engine runs every op inline, in push order: any lost dependency between a gradient op and a
// forward op, or between two gradient ops, shows up as a difference), and on cpu and sim(0)
// (which runs the same kernels through the accelerator's streams and copy queues).
#include "frontend_test_util.h"

namespace tandem::testing {

namespace ag = tandem::autograd;

namespace {

using Gradients = std::vector<std::vector<double>>;

bool broadcastable(const Shape& a, const Shape& b) {
  const int n = std::max(a.ndim(), b.ndim());
  for (int i = 0; i < n; ++i) {
    const int ia = a.ndim() - 1 - i, ib = b.ndim() - 1 - i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
  }
  return true;
}

// Runs program `seed` on `engine`, its arrays on `device`; returns every leaf's gradient.
// `steps` ops are drawn from the op set below, on operands drawn from every array made so
// far; the loss adds up the sums of the last arrays.
Gradients run_program(Engine& engine, Device device, std::uint64_t seed, int steps) {
  nd::EngineScope scope(engine);
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::size_t n) {
    return static_cast<std::size_t>(std::uniform_int_distribution<std::size_t>(0, n - 1)(rng));
  };
  const std::vector<Shape> leaf_shapes = {Shape{3, 4}, Shape{4}, Shape{3, 1}, Shape{4, 4},
                                          Shape{4, 3}};
  std::vector<NDArray> leaves;
  for (std::size_t i = 0; i < leaf_shapes.size(); ++i) {
    const Host host = random_host(leaf_shapes[i], rng, -1, 1);
    leaves.push_back(nd::from_vector(host.values, host.shape, device));
    leaves.back().attach_grad(i % 2 == 0 ? ag::GradReq::write : ag::GradReq::add);
  }
  std::vector<NDArray> pool = leaves;
  {
    auto record = ag::record();
    for (int step = 0; step < steps; ++step) {
      const NDArray a = pool[pick(pool.size())];
      std::vector<NDArray> partners;
      for (const NDArray& b : pool)
        if (broadcastable(a.shape(), b.shape())) partners.push_back(b);
      const NDArray b = partners[pick(partners.size())];
      NDArray out;
      switch (pick(14)) {
        case 0:
          out = a + b;
          break;
        case 1:
          out = a - b * 0.5;
          break;
        case 2:
          out = a * b;
          break;
        case 3:
          out = a / (nd::square(b) + 1.0);
          break;
        case 4:
          out = nd::maximum(a, b);
          break;
        case 5:
          out = nd::tanh(a);
          break;
        case 6:
          out = nd::sigmoid(a) * 2.0;
          break;
        case 7:
          out = nd::relu(a) + nd::exp(a * 0.1);
          break;
        case 8:
          out = nd::sum(a, pick(static_cast<std::size_t>(a.ndim())) == 0 ? 0 : -1, true);
          break;
        case 9:
          out = nd::max(a, -1, true) - nd::mean(a);
          break;
        case 10:
          out = a.ndim() == 2 ? nd::softmax(a) : nd::log_softmax(a);
          break;
        case 11: {
          // dot with any array whose first dimension matches a's last.
          std::vector<NDArray> rights;
          for (const NDArray& c : pool)
            if (c.ndim() <= 2 && c.shape()[0] == a.shape()[a.ndim() - 1]) rights.push_back(c);
          out = rights.empty() ? a * 0.5 : nd::dot(a, rights[pick(rights.size())]) * 0.25;
          break;
        }
        case 12:
          out = a.ndim() == 2 ? a.T() * nd::sqrt(nd::square(a.T()) + 1.0) : nd::abs(a) + a;
          break;
        default:
          out = a.shape()[0] > 1 ? nd::concat({a.slice(0, 1), a * 3.0}, 0) : a.reshape({-1});
          break;
      }
      pool.push_back(out);
    }
    NDArray loss = nd::sum(pool.back());
    for (std::size_t i = pool.size() - 4; i + 1 < pool.size(); ++i) loss = loss + nd::mean(pool[i]);
    loss.backward();
  }
  Gradients gradients;
  for (const NDArray& leaf : leaves) gradients.push_back(leaf.grad().to_vector<double>());
  return gradients;
}

std::size_t nonzero(const Gradients& gradients) {
  std::size_t count = 0;
  for (const auto& leaf : gradients)
    for (double g : leaf) count += g != 0 ? 1 : 0;
  return count;
}

void check_identical(const Gradients& got, const Gradients& expected, const std::string& what) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].size() == expected[i].size());
    for (std::size_t j = 0; j < got[i].size(); ++j) {
      if (!(got[i][j] == expected[i][j]) &&
          !(std::isnan(got[i][j]) && std::isnan(expected[i][j]))) {
        FAIL_CHECK(what << ": leaf " << i << " element " << j << ": " << got[i][j] << " vs "
                        << expected[i][j]);
        return;
      }
    }
  }
}

}  // namespace

TEST_SUITE("frontend.autograd_differential") {
  TEST_CASE("random differentiable programs give identical gradients on threaded and naive") {
    auto threaded = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    auto one_worker = Engine::create(EngineConfig{.kind = EngineKind::threaded, .cpu_workers = 1});
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    const int programs = static_cast<int>(scaled(40, 4));
    for (int seed = 1; seed <= programs; ++seed) {
      CAPTURE(seed);
      const Gradients expected = run_program(*naive, cpu(), static_cast<std::uint64_t>(seed), 24);
      CHECK(nonzero(expected) > 0);
      check_identical(run_program(*threaded, cpu(), static_cast<std::uint64_t>(seed), 24), expected,
                      "threaded");
      check_identical(run_program(*one_worker, cpu(), static_cast<std::uint64_t>(seed), 24),
                      expected, "threaded, one worker");
    }
  }

  TEST_CASE("random differentiable programs give identical gradients on cpu and sim(0)") {
    auto threaded = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    const int programs = static_cast<int>(scaled(20, 3));
    for (int seed = 100; seed < 100 + programs; ++seed) {
      CAPTURE(seed);
      const Gradients expected = run_program(*naive, cpu(), static_cast<std::uint64_t>(seed), 24);
      check_identical(run_program(*threaded, sim(0), static_cast<std::uint64_t>(seed), 24),
                      expected, "sim(0), threaded");
      check_identical(run_program(*naive, sim(0), static_cast<std::uint64_t>(seed), 24), expected,
                      "sim(0), naive");
    }
  }
}

}  // namespace tandem::testing
