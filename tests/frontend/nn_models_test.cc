// nn::models: d2l's ResNet-18 and the two LeNets. Output shapes, exact parameter counts (worked
// out by hand from the layer list), a few SGD steps lowering the loss, hybridize giving the same
// outputs as the eager forward, and the errors of the constructors.
#include <cmath>
#include <cstdint>
#include <string>

#include "frontend_test_util.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nn/nn.h"

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;
namespace models = tandem::nn::models;

struct Counts {
  std::int64_t trained = 0;  // grad_req not null: weights, biases, gamma, beta
  std::int64_t all = 0;      // with BatchNorm's running statistics
};

Counts count_parameters(const nn::Block& net) {
  Counts counts;
  for (const auto& [name, parameter] : net.collect_params()) {
    const std::int64_t size = parameter->shape().num_elements();
    counts.all += size;
    if (parameter->grad_req() != nn::GradReq::null) counts.trained += size;
  }
  return counts;
}

// Trains `net` for `steps` SGD steps on one fixed batch; returns the first and last mean loss.
std::pair<double, double> fit_one_batch(nn::Block& net, const NDArray& x, const NDArray& labels,
                                        double lr, int steps) {
  nn::Trainer trainer(net.collect_params(), nn::SGD(lr));
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::softmax_cross_entropy(net(x), labels).mean();
    }
    loss.backward();
    trainer.step(1);
    (step == 0 ? first : last) = loss.scalar<double>();
  }
  return {first, last};
}

}  // namespace

TEST_SUITE("frontend.nn_models") {
  TEST_CASE("resnet18 maps (N, 1, 28, 28) to (N, classes) with d2l's 11,175,818 parameters") {
    auto net = models::resnet18(10);
    net->initialize(nn::Normal(0.01, 7));
    const NDArray logits = (*net)(nd::random::uniform({2, 1, 28, 28}));
    CHECK(logits.shape() == Shape{2, 10});
    // Stem 3x3 conv 1->64 with bias and BatchNorm; stages of two residual blocks (3x3 convs
    // with bias, two BatchNorms, a 1x1 projection in the first block of stages 2-4); Dense
    // 512->10. The same sum as d2l's Gluon network (Gluon's convolutions have biases).
    const Counts counts = count_parameters(*net);
    CHECK(counts.trained == 11'175'818);
    CHECK(counts.all - counts.trained == 2 * (64 + 2 * 2 * (64 + 128 + 256 + 512)));
    // Another class count changes the last layer only.
    auto hundred = models::resnet18(100);
    hundred->initialize(nn::Normal(0.01, 7));
    CHECK((*hundred)(nd::random::uniform({1, 1, 28, 28})).shape() == Shape{1, 100});
    CHECK(count_parameters(*hundred).trained == 11'175'818 + 90 * 512 + 90);
  }

  TEST_CASE("both LeNets map (N, 1, 28, 28) to (N, 10) with LeNet-5's 61,706 parameters") {
    for (const models::LeNetStyle style :
         {models::LeNetStyle::classic, models::LeNetStyle::modern}) {
      auto net = models::lenet(style);
      net->initialize(nn::Xavier());
      CHECK((*net)(nd::random::uniform({3, 1, 28, 28})).shape() == Shape{3, 10});
      // 6*1*25+6 + 16*6*25+16 + 400*120+120 + 120*84+84 + 84*10+10.
      CHECK(count_parameters(*net).trained == 61'706);
      CHECK(count_parameters(*net).all == 61'706);
    }
  }

  TEST_CASE("a few SGD steps on one batch lower the loss of resnet18 and of LeNet") {
    nd::random::seed(11);
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 3});
    {
      // 12x12 inputs keep the test short: the network is the same (stages at 12, 6, 3, 2).
      auto net = models::resnet18(4);
      net->initialize(nn::Normal(0.01, 5));
      const auto [first, last] =
          fit_one_batch(*net, nd::random::uniform({4, 1, 12, 12}), labels, 0.01, 6);
      MESSAGE("resnet18 loss " << first << " -> " << last);
      CHECK(std::isfinite(last));
      CHECK(last < first);
    }
    {
      auto net = models::lenet(models::LeNetStyle::modern, 4);
      net->initialize(nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3, 5));
      const auto [first, last] =
          fit_one_batch(*net, nd::random::uniform({4, 1, 28, 28}), labels, 0.1, 10);
      MESSAGE("lenet loss " << first << " -> " << last);
      CHECK(last < first);
    }
  }

  TEST_CASE("hybridized resnet18 and LeNet give the eager outputs") {
    const NDArray x = nd::random::uniform({2, 1, 12, 12});
    auto resnet = models::resnet18(10);
    auto lenet = models::lenet(models::LeNetStyle::classic);
    resnet->initialize(nn::Normal(0.01, 3));
    lenet->initialize(nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3, 3));
    const NDArray image = nd::random::uniform({2, 1, 28, 28});
    const std::vector<double> resnet_eager = (*resnet)(x).to_vector<double>();
    const std::vector<double> lenet_eager = (*lenet)(image).to_vector<double>();
    resnet->hybridize();
    lenet->hybridize();
    for (int call = 0; call < 2; ++call) {  // records, then replays
      CHECK((*resnet)(x).to_vector<double>() == resnet_eager);
      CHECK((*lenet)(image).to_vector<double>() == lenet_eager);
    }
    REQUIRE(resnet->hybrid_cache() != nullptr);
    CHECK(resnet->hybrid_cache()->last_call_replayed());
    CHECK(lenet->hybrid_cache()->last_call_replayed());
  }

  TEST_CASE("Block::to moves a network's parameters, values and all, and it trains there") {
    if (device_count(DeviceKind::sim) < 2) return;
    auto net = models::lenet(models::LeNetStyle::modern);
    net->initialize(nn::Xavier());
    const NDArray x = nd::random::uniform({2, 1, 28, 28});
    const std::vector<double> on_cpu = (*net)(x).to_vector<double>();
    net->hybridize();
    (*net)(x);  // recorded on cpu: to() must forget it
    net->to(sim(1));
    for (const auto& [name, parameter] : net->collect_params()) {
      CHECK(parameter->devices() == std::vector<Device>{sim(1)});
    }
    const NDArray y = (*net)(x.copyto(sim(1)));
    CHECK(y.device() == sim(1));
    CHECK(y.to_vector<double>() == on_cpu);
    // Replicated for data parallelism: every copy holds the same values.
    net->to({sim(0), sim(1)});
    const nn::Parameter& weight = net->collect_params()["0.weight"];
    CHECK(weight.data(sim(0)).to_vector<double>() == weight.data(sim(1)).to_vector<double>());
    const auto [first, last] =
        fit_one_batch(net->to(cpu()), x, nd::from_vector(std::vector<std::int32_t>{1, 2}), 0.1, 4);
    CHECK(last < first);
    check_error([&] { net->to(std::vector<Device>{}); }, {"to", "no device"});
    check_error([&] { net->to({sim(0), sim(0)}); }, {"sim(0)", "twice"});
    CHECK(weight.devices() == std::vector<Device>{cpu()});  // left as it was
  }

  TEST_CASE("Block::clone copies structure and values; the clone trains on its own") {
    auto net = models::resnet18(10);
    net->initialize(nn::Normal(0.01, 9));
    const NDArray x = nd::random::uniform({2, 1, 12, 12});
    const std::vector<double> original = (*net)(x).to_vector<double>();
    std::shared_ptr<nn::Block> twin = net->clone();
    CHECK((*twin)(x).to_vector<double>() == original);
    CHECK(count_parameters(*twin).all == count_parameters(*net).all);
    // Training the clone leaves the original as it was.
    fit_one_batch(*twin, x, nd::from_vector(std::vector<std::int32_t>{1, 2}), 0.01, 2);
    CHECK((*net)(x).to_vector<double>() == original);
    CHECK((*twin)(x).to_vector<double>() != original);
    // Every library layer clones, deferred shapes included (a clone before the first forward
    // is uninitialized, and infers its shapes itself).
    nn::Sequential mixed;
    mixed.add(nn::Conv2D(4, 3, {.padding = 1})).add(nn::BatchNorm()).add(nn::Activation(nn::relu));
    mixed.add(nn::MaxPool2D(2)).add(nn::AvgPool2D(1)).add(nn::Dropout(0.5, 1)).add(nn::Flatten());
    mixed.add(nn::Dense(3, nn::tanh));
    mixed.initialize(nn::Xavier());
    const std::shared_ptr<nn::Block> early = mixed.clone();
    const NDArray image = nd::random::uniform({2, 1, 6, 6});
    const std::vector<double> expected = mixed(image).to_vector<double>();
    CHECK(mixed.clone()->operator()(image).to_vector<double>() == expected);
    CHECK_FALSE(early->collect_params()["0.weight"].initialized());
    // A user block that does not say how to rebuild itself cannot be cloned.
    struct Opaque : nn::Block {
      NDArray forward(const NDArray& in) override { return in; }
    };
    nn::Sequential holder;
    holder.add(Opaque());
    check_error([&] { holder.clone(); }, {"clone", "clone_structure"});
  }

  TEST_CASE("model constructors reject meaningless sizes with the value in the message") {
    check_error([] { models::resnet18(0); }, {"resnet18", "num_classes", "0"});
    check_error([] { models::lenet(models::LeNetStyle::modern, -2); },
                {"lenet", "num_classes", "-2"});
    check_error([] { models::Residual(0); }, {"Residual", "channels", "0"});
    check_error([] { models::Residual(8, true, 0); }, {"Residual", "stride", "0"});
  }
}

}  // namespace tandem::testing
