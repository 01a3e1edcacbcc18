// Random arrays: seeds reproduce, draws are ordered by the generator's var, the values have the
// right distribution, and engine kind or thread count cannot change them.
#include "frontend_test_util.h"

namespace tandem::testing {

namespace {

std::vector<float> draw_sequence(Engine& engine, std::uint64_t seed) {
  nd::EngineScope scope(engine);
  nd::random::seed(seed);
  auto a = nd::random::uniform({100});
  auto b = nd::random::normal({3, 33});
  auto c = nd::random::uniform({7}, {.low = -1, .high = 1});
  std::vector<float> all = a.to_vector<float>();
  for (const auto& part : {b.to_vector<float>(), c.to_vector<float>()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

}  // namespace

TEST_SUITE("frontend.random") {
  TEST_CASE("a seed gives the same arrays on every engine kind and worker count") {
    auto threaded = Engine::create(EngineConfig{});
    auto single = Engine::create(EngineConfig{.cpu_workers = 1});
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    const auto reference = draw_sequence(*naive, 42);
    CHECK(draw_sequence(*threaded, 42) == reference);
    CHECK(draw_sequence(*single, 42) == reference);
    CHECK(draw_sequence(*threaded, 43) != reference);
  }

  TEST_CASE("draws continue the stream; reseeding restarts it; generators are independent") {
    nd::random::seed(5);
    const auto first = nd::random::uniform({12}).to_vector<float>();
    const auto second = nd::random::uniform({12}).to_vector<float>();
    CHECK(first != second);
    nd::random::seed(5);
    const auto both = nd::random::uniform({24}).to_vector<float>();
    // One draw of 24 equals two draws of 12: a draw takes whole Philox blocks of 4 floats.
    CHECK(std::equal(first.begin(), first.end(), both.begin()));
    CHECK(std::equal(second.begin(), second.end(), both.begin() + 12));
    nd::random::Generator mine(5);
    nd::random::uniform({3});  // the default generator moves on; `mine` does not
    CHECK(nd::random::uniform({12}, {.generator = &mine}).to_vector<float>() == first);
  }

  TEST_CASE("many queued draws run in push order") {
    nd::random::seed(9);
    std::vector<nd::NDArray> draws;
    for (int i = 0; i < 50; ++i) draws.push_back(nd::random::uniform({16}, {.dtype = nd::float64}));
    nd::random::seed(9);
    const auto all = nd::random::uniform({50 * 16}, {.dtype = nd::float64}).to_vector<double>();
    for (int i = 0; i < 50; ++i) {
      const auto v = draws[static_cast<std::size_t>(i)].to_vector<double>();
      CHECK(std::equal(v.begin(), v.end(), all.begin() + i * 16));
    }
  }

  TEST_CASE("uniform and normal have the requested moments and range") {
    const std::int64_t n = scaled(1000000, 20000);
    for (DType dtype : {nd::float32, nd::float64}) {
      const auto u =
          nd::random::uniform({n}, {.low = 2, .high = 5, .dtype = dtype}).to_vector<double>();
      CHECK(*std::min_element(u.begin(), u.end()) >= 2.0);
      CHECK(*std::max_element(u.begin(), u.end()) <= 5.0);
      double mean = 0;
      for (double v : u) mean += v;
      mean /= static_cast<double>(n);
      CHECK(mean == doctest::Approx(3.5).epsilon(0.01));
      const auto g =
          nd::random::normal({n}, {.mean = 1, .stddev = 0.5, .dtype = dtype}).to_vector<double>();
      double m = 0, s = 0;
      for (double v : g) m += v;
      m /= static_cast<double>(n);
      for (double v : g) s += (v - m) * (v - m);
      s = std::sqrt(s / static_cast<double>(n));
      CHECK(m == doctest::Approx(1.0).epsilon(0.01));
      CHECK(s == doctest::Approx(0.5).epsilon(0.01));
      CHECK(std::all_of(g.begin(), g.end(), [](double v) { return std::isfinite(v); }));
    }
    const auto seeds_style = nd::random::uniform(0, 1, {2, 3});
    CHECK(seeds_style.shape() == Shape{2, 3});
    CHECK(nd::random::normal(0, 0.01, {4}).dtype() == nd::float32);
  }

}  // TEST_SUITE

}  // namespace tandem::testing
