// tandem::nn's blocks and parameters: deferred shapes, initializers' statistics, hierarchical
// names, the layers' forward, saving and loading parameters, and the errors of each.
#include <cmath>
#include <numeric>
#include <string>

#include "frontend_test_util.h"
#include "scratch_dir.h"
#include "tandem/nd/autograd.h"
#include "tandem/nn/nn.h"

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;

struct Moments {
  double mean = 0, variance = 0, min = 0, max = 0;
};

Moments moments_of(const NDArray& array) {
  const std::vector<double> values = array.to_vector<double>();
  Moments m;
  m.min = *std::min_element(values.begin(), values.end());
  m.max = *std::max_element(values.begin(), values.end());
  m.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  for (double v : values) m.variance += (v - m.mean) * (v - m.mean);
  m.variance /= static_cast<double>(values.size());
  return m;
}

// out = relu(x + dense2(relu(dense1(x)))): a residual block written as user code.
class Residual : public nn::Block {
 public:
  explicit Residual(std::int64_t width)
      : dense1_(register_child("dense1", nn::Dense(width, nn::relu))),
        dense2_(register_child("dense2", nn::Dense(width))) {}
  NDArray forward(const NDArray& x) override { return nd::relu(x + (*dense2_)((*dense1_)(x))); }

 private:
  std::shared_ptr<nn::Dense> dense1_, dense2_;
};

std::vector<std::string> names_of(const nn::ParameterDict& params) {
  std::vector<std::string> names;
  for (const auto& entry : params) names.push_back(entry.first);
  return names;
}

}  // namespace

TEST_SUITE("frontend.nn_layers") {
  TEST_CASE("a Dense layer's weight shape is inferred at the first forward") {
    nn::Dense dense(5);
    dense.initialize(nn::Xavier());
    CHECK(dense.weight().deferred());
    CHECK(dense.weight().shape() == Shape{5, 0});
    CHECK(error_of([&] { dense.weight().data(); }).find("first forward") != std::string::npos);
    const NDArray y = dense(nd::ones({3, 4}));
    CHECK(y.shape() == Shape{3, 5});
    CHECK(dense.weight().shape() == Shape{5, 4});
    CHECK(dense.weight().initialized());
    CHECK(dense.bias().data().to_vector<double>() == std::vector<double>(5, 0.0));
    // A later input of another width is an error naming the weight and both shapes.
    const std::string message = error_of([&] { dense(nd::ones({3, 6})); });
    CHECK(message.find("weight") != std::string::npos);
    CHECK(message.find("5x4") != std::string::npos);
  }

  TEST_CASE("a Dense layer computes x . weight^T + bias, flattening inputs of rank > 2") {
    nn::Dense dense(2, nn::ActivationType::none, {.in_units = 3, .dtype = nd::float64});
    dense.initialize(nn::Zeros());
    CHECK(dense.weight().initialized());
    dense.weight().set_data(nd::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}));
    dense.bias().set_data(nd::from_vector(std::vector<double>{10, 20}));
    const NDArray x = nd::from_vector(std::vector<double>{1, 0, -1, 2, 2, 2}, {2, 3});
    CHECK(dense(x).to_vector<double>() == std::vector<double>{8, 18, 22, 50});
    CHECK(dense(x.reshape({2, 3, 1})).to_vector<double>() == std::vector<double>{8, 18, 22, 50});
    nn::Dense with_relu(2, nn::relu, {.in_units = 3, .dtype = nd::float64});
    with_relu.initialize(nn::Zeros());
    with_relu.bias().set_data(nd::from_vector(std::vector<double>{-1, 1}));
    CHECK(with_relu(x).to_vector<double>() == std::vector<double>{0, 1, 0, 1});
  }

  TEST_CASE("initializers draw with the documented statistics") {
    nd::random::seed(5);
    const Shape shape{200, 300};
    SUBCASE("Uniform(0.5): in [-0.5, 0.5), variance 0.5^2 / 3") {
      const Moments m = moments_of(nn::Uniform(0.5).create(shape, nd::float64));
      CHECK(m.min >= -0.5);
      CHECK(m.max < 0.5);
      CHECK(std::abs(m.mean) < 0.005);
      CHECK(m.variance == doctest::Approx(0.25 / 3).epsilon(0.02));
    }
    SUBCASE("Normal(0.1): mean 0, standard deviation 0.1") {
      const Moments m = moments_of(nn::Normal(0.1).create(shape, nd::float32));
      CHECK(std::abs(m.mean) < 0.001);
      CHECK(std::sqrt(m.variance) == doctest::Approx(0.1).epsilon(0.02));
    }
    SUBCASE("Xavier: U(-s, s) with s = sqrt(3 / ((fan_in + fan_out) / 2))") {
      const double scale = std::sqrt(3.0 / 250.0);
      const Moments m = moments_of(nn::Xavier().create(shape, nd::float64));
      CHECK(m.min >= -scale);
      CHECK(m.max < scale);
      CHECK(m.variance == doctest::Approx(scale * scale / 3).epsilon(0.02));
      // Gaussian, fan_in, with a receptive field: (20, 10, 3, 3) -> fan_in 90.
      const Moments g =
          moments_of(nn::Xavier(nn::Xavier::Distribution::gaussian, nn::Xavier::Factor::in, 2.0)
                         .create({20, 10, 3, 3}, nd::float64));
      CHECK(std::sqrt(g.variance) == doctest::Approx(std::sqrt(2.0 / 90)).epsilon(0.1));
    }
    SUBCASE("Zeros, Ones and Constant fill every dtype") {
      CHECK(nn::Zeros().create({3}, nd::int32).to_vector<int>() == std::vector<int>{0, 0, 0});
      CHECK(nn::Ones().create({2}, nd::float32).to_vector<double>() == std::vector<double>{1, 1});
      CHECK(nn::Constant(2.5).create({1}, nd::float64).scalar() == 2.5);
    }
  }

  TEST_CASE("initial values are reproducible: by nd::random::seed, or by the initializer's seed") {
    const auto draw = [](std::uint64_t seed) {
      nd::random::seed(seed);
      nn::Sequential net;
      net.add(nn::Dense(4, nn::relu, {.in_units = 3})).add(nn::Dense(2, nn::relu, {.in_units = 4}));
      net.initialize(nn::Xavier());
      return net.collect_params()["1.weight"].data().to_vector<double>();
    };
    CHECK(draw(3) == draw(3));
    CHECK(draw(3) != draw(4));
    nd::random::seed(1);
    const auto a = nn::Normal(1.0, 42).create({8}, nd::float64).to_vector<double>();
    nd::random::seed(2);
    const auto b = nn::Normal(1.0, 42).create({8}, nd::float64).to_vector<double>();
    CHECK(a == b);
    CHECK(error_of([] { nn::Normal().create({2}, nd::int32); }).find("int32") != std::string::npos);
    CHECK(error_of([] { nn::Xavier().create({4}, nd::float32); }).find("2 dimensions") !=
          std::string::npos);
  }

  TEST_CASE("collect_params names parameters by their path; residual blocks are user code") {
    nn::Sequential net;
    net.add(nn::Dense(8, nn::relu)).add(Residual(8)).add(nn::Dense(3));
    CHECK(names_of(net.collect_params()) ==
          std::vector<std::string>{"0.weight", "0.bias", "1.dense1.weight", "1.dense1.bias",
                                   "1.dense2.weight", "1.dense2.bias", "2.weight", "2.bias"});
    net.initialize(nn::Xavier());
    const NDArray y = net(nd::random::uniform({4, 5}));
    CHECK(y.shape() == Shape{4, 3});
    CHECK(net.collect_params()["1.dense2.weight"].shape() == Shape{8, 8});
    CHECK(error_of([&] { net.collect_params()["nope"]; }).find("0.weight") != std::string::npos);
  }

  TEST_CASE("Activation, Flatten and Dropout; Dropout is the identity outside training") {
    const NDArray x = nd::from_vector(std::vector<double>{-1, 0, 2, 3}, {2, 2});
    CHECK(nn::Activation(nn::relu)(x).to_vector<double>() == std::vector<double>{0, 0, 2, 3});
    CHECK(nn::Activation(nn::tanh)(x).to_vector<double>()[2] == doctest::Approx(std::tanh(2.0)));
    CHECK(nn::Flatten()(nd::ones({2, 3, 4})).shape() == Shape{2, 12});
    nn::Dropout dropout(0.5, 7);
    const NDArray ones = nd::ones({100, 100}, nd::float64);
    CHECK(dropout(ones).to_vector<double>() == ones.to_vector<double>());
    NDArray dropped;
    {
      auto recording = autograd::record();
      dropped = dropout(ones);
    }
    const std::vector<double> values = dropped.to_vector<double>();
    const auto zeros = std::count(values.begin(), values.end(), 0.0);
    CHECK(zeros > 4500);
    CHECK(zeros < 5500);
    CHECK(std::count(values.begin(), values.end(), 2.0) == 10000 - zeros);
    CHECK(error_of([] { nn::Dropout(1.0); }).find("rate") != std::string::npos);
  }

  TEST_CASE("BatchNorm normalizes with batch statistics in training, running ones in prediction") {
    nn::BatchNorm norm({.dtype = nd::float64});
    norm.initialize();
    const NDArray x = nd::random::normal(3.0, 2.0, {64, 4}).astype(nd::float64);
    CHECK(norm.gamma().deferred());
    NDArray y;
    {
      auto recording = autograd::record();
      y = norm(x);
    }
    CHECK(norm.gamma().shape() == Shape{4});
    const NDArray mean = nd::mean(y, 0);
    for (double m : mean.to_vector<double>()) CHECK(std::abs(m) < 1e-9);
    // The running mean moved 10% of the way from 0 to the batch mean (momentum 0.9).
    const std::vector<double> running = norm.running_mean().data().to_vector<double>();
    const std::vector<double> batch_mean = nd::mean(x, 0).to_vector<double>();
    for (std::size_t i = 0; i < 4; ++i) CHECK(running[i] == doctest::Approx(0.1 * batch_mean[i]));
    // Prediction: (x - running_mean) / sqrt(running_var + eps).
    const std::vector<double> predicted = norm(x).to_vector<double>();
    const std::vector<double> var = norm.running_var().data().to_vector<double>();
    const std::vector<double> xs = x.to_vector<double>();
    CHECK(predicted[5] == doctest::Approx((xs[5] - running[1]) / std::sqrt(var[1] + 1e-5)));
  }

  TEST_CASE("save_parameters and load_parameters round-trip, onto another device too") {
    ScratchDir dir;
    const std::string path = dir.file("mlp.params");
    nn::Sequential net;
    net.add(nn::Dense(6, nn::relu)).add(nn::Dense(3));
    net.initialize(nn::Xavier());
    const NDArray x = nd::random::uniform({5, 4});
    const std::vector<double> expected = net(x).to_vector<double>();
    net.save_parameters(path);
    CHECK(nd::load(path).size() == 4);

    nn::Sequential fresh;  // deferred shapes: the file gives them
    fresh.add(nn::Dense(6, nn::relu)).add(nn::Dense(3));
    fresh.load_parameters(path);
    CHECK(fresh(x).to_vector<double>() == expected);
    if (device_count(DeviceKind::sim) > 0) {
      nn::Sequential on_sim;
      on_sim.add(nn::Dense(6, nn::relu)).add(nn::Dense(3));
      on_sim.load_parameters(path, {sim(0)});
      CHECK(on_sim(x.copyto(sim(0))).to_vector<double>() == expected);
    }
    if (device_count(DeviceKind::sim) > 1) {  // every copy of a data-parallel network is loaded
      nn::Sequential both;
      both.add(nn::Dense(6, nn::relu)).add(nn::Dense(3));
      both.initialize(nn::Zeros(), {sim(0), sim(1)});
      both(x.copyto(sim(0)));
      both.load_parameters(path);
      CHECK(both(x.copyto(sim(1))).to_vector<double>() == expected);
    }

    nn::Sequential wider;
    wider.add(nn::Dense(7, nn::relu)).add(nn::Dense(3));
    const std::string shapes = error_of([&] { wider.load_parameters(path); });
    CHECK(shapes.find("0.weight") != std::string::npos);
    CHECK(shapes.find(path) != std::string::npos);
    nn::Sequential deeper;
    deeper.add(nn::Dense(6, nn::relu)).add(nn::Dense(3)).add(nn::Dense(2));
    CHECK(error_of([&] { deeper.load_parameters(path); }).find("2.weight") != std::string::npos);
    CHECK(error_of([&] { fresh.load_parameters(dir.file("missing")); }).find("missing") !=
          std::string::npos);
    nn::Sequential unrun;
    unrun.add(nn::Dense(2));
    unrun.initialize();
    CHECK(error_of([&] { unrun.save_parameters(dir.file("x")); }).find("first forward") !=
          std::string::npos);
  }

  TEST_CASE("errors: uninitialized parameters, missing devices, wrong shapes") {
    nn::Dense dense(3, nn::relu, {.in_units = 2});
    CHECK(error_of([&] { dense(nd::ones({1, 2})); }).find("initialize") != std::string::npos);
    dense.initialize(nn::Uniform(), {cpu()});
    if (device_count(DeviceKind::sim) > 0) {
      const std::string message = error_of([&] { dense(nd::ones({1, 2}, sim(0))); });
      CHECK(message.find("sim(0)") != std::string::npos);
      CHECK(message.find("cpu(0)") != std::string::npos);
    }
    CHECK(error_of([&] { dense(nd::ones({1, 5})); }).find("3x2") != std::string::npos);
    CHECK(error_of([&] { dense(nd::ones({5})); }).find("batch") != std::string::npos);
    CHECK(error_of([&] {
            dense.initialize(nn::Uniform(), {cpu(), cpu()});
          }).find("twice") != std::string::npos);
    CHECK(error_of([] { nn::Dense(0); }).find("units") != std::string::npos);
    CHECK(error_of([&] {
            dense.weight().set_data(nd::ones({2, 3}));
          }).find("3x2") != std::string::npos);
  }
}

}  // namespace tandem::testing
