// tandem::nn's optimizers and Trainer: SGD and Adam against updates computed by hand, the
// Trainer's rescaling and data parallelism (two devices give the one-device step), and an MLP
// that learns the digits.
#include <cmath>
#include <string>

#include "data_parallel_support.h"
#include "frontend_test_util.h"
#include "tandem/data/data_loader.h"
#include "tandem/data/digits.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nn/nn.h"

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;

constexpr const char* kDigitsDir = TANDEM_DIGITS_DIR;

const std::vector<double> kWeight{0.5, -1.0, 2.0};
const std::vector<double> kGrad{1.0, 3.0, -2.0};

// Applies `optimizer` three times to kWeight with gradient kGrad and returns the weights.
std::vector<double> three_updates(const nn::Optimizer& optimizer) {
  NDArray weight = nd::from_vector(kWeight);
  const NDArray grad = nd::from_vector(kGrad);
  std::vector<NDArray> state = optimizer.create_state(weight);
  for (long t = 1; t <= 3; ++t) optimizer.update(t, weight, grad, state);
  return weight.to_vector<double>();
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                 double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    CHECK(std::abs(actual[i] - expected[i]) <= tolerance * std::max(1.0, std::abs(expected[i])));
  }
}

}  // namespace

TEST_SUITE("frontend.nn_training") {
  TEST_CASE("SGD with momentum and weight decay matches the update computed by hand") {
    nn::SGD sgd(0.1, 0.9, 0.01);
    sgd.set_rescale_grad(0.5);
    std::vector<double> w = kWeight, mom(3, 0.0);
    for (int t = 0; t < 3; ++t) {
      for (std::size_t i = 0; i < 3; ++i) {
        const double g = 0.5 * kGrad[i] + 0.01 * w[i];
        mom[i] = 0.9 * mom[i] - 0.1 * g;
        w[i] += mom[i];
      }
    }
    check_close(three_updates(sgd), w, 1e-14);
    nn::SGD plain(0.1);
    std::vector<double> p = kWeight;
    for (int t = 0; t < 3; ++t) {
      for (std::size_t i = 0; i < 3; ++i) p[i] -= 0.1 * kGrad[i];
    }
    check_close(three_updates(plain), p, 1e-14);
  }

  TEST_CASE("Adam matches the update computed by hand, bias correction included") {
    nn::Adam adam(0.01, 0.8, 0.95, 1e-6, 0.1);
    std::vector<double> w = kWeight, m(3, 0.0), v(3, 0.0);
    for (int t = 1; t <= 3; ++t) {
      const double lr = 0.01 * std::sqrt(1 - std::pow(0.95, t)) / (1 - std::pow(0.8, t));
      for (std::size_t i = 0; i < 3; ++i) {
        const double g = kGrad[i] + 0.1 * w[i];
        m[i] = 0.8 * m[i] + 0.2 * g;
        v[i] = 0.95 * v[i] + 0.05 * g * g;
        w[i] -= lr * m[i] / (std::sqrt(v[i]) + 1e-6);
      }
    }
    check_close(three_updates(adam), w, 1e-14);
  }

  TEST_CASE("Trainer::step scales the gradient by 1 / batch_size and skips grad_req null") {
    nn::Dense dense(1, nn::ActivationType::none,
                    {.use_bias = true, .in_units = 2, .dtype = nd::float64});
    dense.initialize(nn::Ones());
    dense.bias().set_grad_req(nn::GradReq::null);
    nn::Trainer trainer(dense.collect_params(), nn::SGD(0.5));
    const NDArray x = nd::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});
    NDArray loss;
    {
      auto recording = autograd::record();
      loss = dense(x).sum();
    }
    loss.backward();
    // d loss / d weight = column sums of x = (4, 6); step(2): weight -= 0.5 * (4, 6) / 2.
    CHECK(dense.weight().grad(cpu()).to_vector<double>() == std::vector<double>{4, 6});
    trainer.step(2);
    CHECK(dense.weight().data().to_vector<double>() == std::vector<double>{0, -0.5});
    CHECK(dense.bias().data().to_vector<double>() == std::vector<double>{0});  // Zeros, untouched
    CHECK(trainer.steps() == 1);
    CHECK(error_of([&] { trainer.step(0); }).find("batch_size") != std::string::npos);
  }

  TEST_CASE("grad_req add accumulates over backward calls until zero_grad; cast converts") {
    nn::Dense dense(1, nn::ActivationType::none, {.use_bias = false, .in_units = 2});
    dense.initialize(nn::Ones());
    dense.cast(nd::float64);
    CHECK(dense.weight().data().dtype() == nd::float64);
    dense.collect_params().set_grad_req(nn::GradReq::add);
    const NDArray x = nd::from_vector(std::vector<double>{1, 2}, {1, 2});
    for (int i = 0; i < 2; ++i) {
      NDArray y;
      {
        auto recording = autograd::record();
        y = dense(x).sum();
      }
      y.backward();
    }
    CHECK(dense.weight().grad(cpu()).to_vector<double>() == std::vector<double>{2, 4});
    dense.collect_params().zero_grad();
    CHECK(dense.weight().grad(cpu()).to_vector<double>() == std::vector<double>{0, 0});
  }

  TEST_CASE("Trainer::step before the deferred shapes are known is an error naming the parameter") {
    nn::Sequential net;
    net.add(nn::Dense(3));
    net.initialize();
    nn::Trainer trainer(net.collect_params(), nn::Adam());
    CHECK(error_of([&] { trainer.step(4); }).find("0.weight") != std::string::npos);
  }

  TEST_CASE("data parallel on sim(0) and sim(1) equals one device with the same global batch") {
    if (device_count(DeviceKind::sim) < 2) {
      MESSAGE("SKIPPED: fewer than two sim devices");
      return;
    }
    const std::vector<Device> two{sim(0), sim(1)};
    nd::random::seed(11);
    const NDArray images = nd::random::uniform({4, 32, 64}).astype(nd::float64);
    const NDArray labels = nd::random::uniform(0, 10, {4, 32}).astype(nd::int32);

    bool adam = false;
    SUBCASE("SGD with momentum and weight decay") {
      adam = false;
    }
    SUBCASE("Adam with weight decay") {
      adam = true;
    }
    const auto train = [&](const std::vector<Device>& devices) {
      auto net = small_mlp(devices);
      std::shared_ptr<nn::Optimizer> optimizer;
      if (adam) {
        optimizer = std::make_shared<nn::Adam>(0.01, 0.9, 0.999, 1e-8, 1e-3);
      } else {
        optimizer = std::make_shared<nn::SGD>(0.5, 0.9, 1e-3);
      }
      nn::Trainer trainer(net->collect_params(), optimizer);
      for (std::int64_t step = 0; step < 4; ++step) {
        forward_backward(*net, images[step], labels[step], devices);
        trainer.step(32);
      }
      return parameter_values(*net);
    };
    const ParameterValues one = train({sim(0)});
    const ParameterValues both = train(two);
    const double worst = largest_difference(one, both);
    MESSAGE("largest difference between one and two devices: " << worst);
    CHECK(worst <= 1e-12);
  }

  TEST_CASE("training steps (layers, backward, Trainer::step) queue their ops without waiting") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    {
      nd::EngineScope engine_scope(*engine);
      nn::Sequential net;
      net.add(nn::Dense(32, nn::relu)).add(nn::BatchNorm()).add(nn::Dropout(0.5, 3));
      net.add(nn::Dense(10));
      net.initialize(nn::Xavier());
      nn::Trainer trainer(net.collect_params(), nn::Adam(0.01, 0.9, 0.999, 1e-8, 1e-4));
      const NDArray x = nd::random::uniform({16, 20});
      const NDArray labels = nd::from_vector(std::vector<std::int32_t>(16, 3));
      net(x);  // the deferred shapes
      engine->wait_all();
      // A gate op writes x: every op of the steps below reads x, directly or not.
      Gate gate(*engine, {x.var()});
      NDArray loss;
      for (int step = 0; step < 3; ++step) {
        {
          auto recording = autograd::record();
          loss = nd::softmax_cross_entropy(net(x), labels).sum();
        }
        loss.backward();
        trainer.step(16);
      }
      // Reaching this line with the gate closed shows that nothing above waited.
      CHECK(engine->stats().ops_in_flight >= 50);
      gate.open();
      CHECK(std::isfinite(loss.scalar()));
    }
    engine->wait_all();
  }

  TEST_CASE("an MLP reaches 0.9 training accuracy on the digits within three epochs") {
    if (!data::digits_available(kDigitsDir)) {
      MESSAGE("SKIPPED: the digits data set is not in " << std::string(kDigitsDir)
                                                        << " (run scripts/fetch-digits.sh)");
      return;
    }
    const data::DigitsDataSet digits = data::load_digits(kDigitsDir);
    nd::random::seed(2);
    nn::Sequential net;
    net.add(nn::Flatten()).add(nn::Dense(64, nn::relu)).add(nn::Dense(10));
    net.initialize(nn::Xavier());
    nn::Trainer trainer(net.collect_params(), nn::SGD(0.1, 0.9));
    data::DataLoader loader(digits.train.images, digits.train.labels,
                            {.batch_size = 32, .shuffle = true, .seed = 3});
    double accuracy = 0;
    for (int epoch = 0; epoch < 3; ++epoch) {
      NDArray correct;
      for (const data::Batch& batch : loader) {
        NDArray logits, loss;
        {
          auto recording = autograd::record();
          logits = net(batch.data);
          loss = nd::softmax_cross_entropy(logits, batch.label).sum();
        }
        loss.backward();
        trainer.step(batch.data.shape()[0]);
        const NDArray hits =
            nd::accuracy(logits, batch.label) * static_cast<double>(batch.data.shape()[0]);
        correct = correct.defined() ? correct + hits : hits;
      }
      accuracy = correct.scalar<double>() / static_cast<double>(loader.num_samples());
      MESSAGE("epoch " << epoch + 1 << ": train accuracy " << accuracy);
    }
    CHECK(accuracy >= 0.9);
    const double test = nd::accuracy(net(digits.test.images), digits.test.labels).scalar<double>();
    MESSAGE("test accuracy " << test);
    CHECK(test >= 0.85);
  }
}

}  // namespace tandem::testing
