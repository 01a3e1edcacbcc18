// nn::TrainingStep (issue 22, item 7): a whole training step recorded once and replayed gives
// the eager step's losses and weights bit for bit, on the cpu and on sim(0) (where a replay
// runs device graphs), records again when the learning rate changes, and refuses what it
// cannot replay with a clear error.
#include <memory>
#include <string>
#include <vector>

#include "frontend_test_util.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nd/reduce.h"
#include "tandem/nn/nn.h"

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;

// A small conv net with batch normalisation (running statistics written in the forward) and
// a dense head, the same weights every time it is built.
std::shared_ptr<nn::Sequential> make_net(const std::vector<Device>& devices) {
  nd::random::seed(11);
  auto net = std::make_shared<nn::Sequential>();
  net->add(nn::Conv2D(4, 3, {.padding = 1, .in_channels = 1}))
      .add(nn::BatchNorm())
      .add(nn::Activation(nn::relu))
      .add(nn::MaxPool2D(2))
      .add(nn::Flatten())
      .add(nn::Dense(10, nn::ActivationType::none));
  net->initialize(nn::Xavier(), devices);
  return net;
}

nd::NDArray mean_cross_entropy(const nd::NDArray& output, const nd::NDArray& label) {
  return nd::mean(nd::softmax_cross_entropy(output, label));
}

struct Batch {
  nd::NDArray data, label;
};

std::vector<Batch> batches(Device device, int count) {
  nd::random::seed(5);
  std::vector<Batch> out;
  for (int i = 0; i < count; ++i) {
    out.push_back({nd::random::uniform({8, 1, 6, 6}, device),
                   nd::random::uniform(0, 10, {8}, device).astype(nd::int32)});
  }
  return out;
}

// Losses of `steps` steps, eagerly or through a TrainingStep; `rate_change_at` >= 0 sets the
// learning rate to 0.05 before that step; `schedule` drives the rate instead when set.
std::vector<double> train(Device device, bool replayed, int steps, int rate_change_at,
                          std::vector<double>* weights,
                          std::shared_ptr<const nn::LRScheduler> schedule = nullptr) {
  auto net = make_net({device});
  nn::Trainer trainer(net->collect_params(), nn::SGD(0.1, 0.9, 1e-4));
  if (schedule) trainer.set_lr_scheduler(schedule);
  nn::TrainingStep step(*net, trainer, mean_cross_entropy);
  const std::vector<Batch> data = batches(device, 3);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    if (i == rate_change_at) trainer.set_learning_rate(0.05);
    const Batch& batch = data[static_cast<std::size_t>(i) % data.size()];
    if (replayed) {
      losses.push_back(step(batch.data, batch.label, 8).copy().scalar<double>());
      if (i >= 2 && i != rate_change_at && !schedule) {
        CHECK(step.last_call_replayed());
      }
    } else {
      nd::NDArray loss;
      {
        auto recording = autograd::record();
        loss = mean_cross_entropy((*net)(batch.data), batch.label);
      }
      loss.backward();
      trainer.step(8);
      losses.push_back(loss.scalar<double>());
    }
  }
  CHECK(trainer.steps() == steps);  // replays count as steps too
  if (replayed && !schedule) {
    CHECK(step.recordings() == (rate_change_at >= 0 ? 2u : 1u));
    CHECK(step.num_recorded_ops() > 0);
    CHECK(step.steps() == steps);
  }
  for (const auto& [name, parameter] : net->collect_params()) {
    for (const double v : parameter->data().to_vector<double>()) weights->push_back(v);
  }
  return losses;
}

}  // namespace

TEST_SUITE("frontend.training_step") {
  TEST_CASE("a replayed training step gives the eager losses and weights bit for bit") {
    for (const Device device : {cpu(), sim(0)}) {
      CAPTURE(to_string(device));
      std::vector<double> eager_weights, replayed_weights;
      const std::vector<double> eager = train(device, false, 9, -1, &eager_weights);
      const std::vector<double> replayed = train(device, true, 9, -1, &replayed_weights);
      CHECK(replayed == eager);
      CHECK(replayed_weights == eager_weights);
      CHECK(eager[6] < eager[0]);  // it trains: the same batch, two passes later
    }
  }

  TEST_CASE("a changed learning rate records the step again, with the eager results") {
    std::vector<double> eager_weights, replayed_weights;
    const std::vector<double> eager = train(sim(0), false, 8, 4, &eager_weights);
    const std::vector<double> replayed = train(sim(0), true, 8, 4, &replayed_weights);
    CHECK(replayed == eager);
    CHECK(replayed_weights == eager_weights);
  }

  TEST_CASE("a learning-rate schedule drives replayed steps as it drives eager ones") {
    // The rate halves every 3 steps: each change records again, the steps between replay.
    const auto schedule = std::make_shared<nn::FactorScheduler>(0.1, 3, 0.5);
    std::vector<double> eager_weights, replayed_weights;
    const std::vector<double> eager = train(sim(0), false, 10, -1, &eager_weights, schedule);
    const std::vector<double> replayed = train(sim(0), true, 10, -1, &replayed_weights, schedule);
    CHECK(replayed == eager);
    CHECK(replayed_weights == eager_weights);
  }

  TEST_CASE("what a step cannot replay is refused with the reason") {
    auto net = make_net({cpu()});
    nn::Trainer adam(net->collect_params(), nn::Adam(0.01));
    check_error([&] { nn::TrainingStep step(*net, adam, mean_cross_entropy); },
                {"TrainingStep", "adam", "step count"});
    nn::Trainer sgd(net->collect_params(), nn::SGD(0.1));
    check_error([&] { nn::TrainingStep step(*net, sgd, nullptr); }, {"TrainingStep", "loss"});
    nn::TrainingStep step(*net, sgd, mean_cross_entropy);
    const Batch batch = batches(cpu(), 1)[0];
    check_error([&] { (void)step(batch.data, batch.label, 0); }, {"batch_size", "0"});
    check_error([&] { (void)step(NDArray(), batch.label, 8); }, {"data", "null"});
    check_error(
        [&] {
          auto recording = autograd::record();
          (void)step(batch.data, batch.label, 8);
        },
        {"TrainingStep", "autograd::record"});

    auto both = make_net({sim(0), sim(1)});
    nn::Trainer trainer(both->collect_params(), nn::SGD(0.1));
    check_error([&] { nn::TrainingStep two(*both, trainer, mean_cross_entropy); },
                {"TrainingStep", "2 devices"});
  }
}

}  // namespace tandem::testing
