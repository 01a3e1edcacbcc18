#include "train_step_sim.h"

#include <tandem/accel/accelerator.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "models.h"
#include "tandem/nn/nn.h"

// The sim's modelled clock (SimStream's counters) is internal to the engine.
#include "accel/sim/sim_stream.h"

namespace tandem::bench {

namespace {

namespace nn = tandem::nn;

struct SimClock {
  double busy_us = 0;
  double launches = 0;
};

// sim(0)'s compute and copy streams.
SimClock sim_clock() {
  Accelerator& device = accelerator(sim(0));
  SimClock clock;
  auto add = [&](Stream& stream) {
    auto& sim_stream = dynamic_cast<detail::SimStream&>(stream);
    clock.busy_us += static_cast<double>(sim_stream.modelled_busy_ns()) / 1e3;
    clock.launches += static_cast<double>(sim_stream.launches());
  };
  for (int i = 0; i < device.compute_streams(); ++i) add(device.stream(Queue::compute, i));
  for (Queue queue : {Queue::copy_h2d, Queue::copy_d2h, Queue::copy_d2d}) {
    add(device.stream(queue, 0));
  }
  return clock;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct PerStep {
  double seconds = 0, modelled_us = 0, launches = 0;
};

PerStep measure(bool replayed, int rounds, int steps_per_round) {
  nd::random::seed(3);
  std::shared_ptr<nn::Block> net = examples::make_model("lenet_bn");
  net->initialize(nn::Xavier(), {sim(0)});
  nn::Trainer trainer(net->collect_params(), nn::SGD(0.1));
  const auto loss_of = [](const nd::NDArray& output, const nd::NDArray& label) {
    return nd::sum(nd::softmax_cross_entropy(output, label));
  };
  nn::TrainingStep whole(*net, trainer, loss_of);
  const nd::NDArray x = nd::random::uniform({64, 1, 8, 8}, sim(0));
  const nd::NDArray labels = nd::random::uniform(0, 10, {64}, sim(0)).astype(nd::int32);
  auto step = [&] {
    if (replayed) {
      (void)whole(x, labels, 64);
      return;
    }
    nd::NDArray loss;
    {
      auto recording = autograd::record();
      loss = loss_of((*net)(x), labels);
    }
    loss.backward();
    trainer.step(64);
  };
  for (int i = 0; i < 5; ++i) step();  // the optimizer's state, the recording, the pools
  nd::waitall();
  std::vector<double> seconds, modelled, launches;
  for (int r = 0; r < rounds; ++r) {
    const SimClock before = sim_clock();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps_per_round; ++i) step();
    nd::waitall();
    const SimClock after = sim_clock();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        steps_per_round);
    modelled.push_back((after.busy_us - before.busy_us) / steps_per_round);
    launches.push_back((after.launches - before.launches) / steps_per_round);
  }
  return {median(seconds), median(modelled), median(launches)};
}

}  // namespace

void run_train_step_sim(bool quick, Records& records) {
  const int rounds = quick ? 5 : 11;
  constexpr int kStepsPerRound = 20;
  const double latency_us = AcceleratorConfig::from_env().sim_latency_us;
  for (const char* system : {"eager", "training_step"}) {
    const PerStep step = measure(system[0] == 't', rounds, kStepsPerRound);
    std::printf(
        "train_step_sim: lenet_bn batch 64, %-13s modelled %7.1f us, %5.1f launches, wall "
        "%8.1f us per step\n",
        system, step.modelled_us, step.launches, step.seconds * 1e6);
    records.push_back({{"workload", "train_step_sim"},
                       {"system", system},
                       {"modelled_us", step.modelled_us},
                       {"launches", step.launches},
                       {"seconds", step.seconds},
                       {"steps", kStepsPerRound},
                       {"latency_us", latency_us},
                       {"model", "lenet_bn, batch 64, 1x8x8 images"},
                       {"device", "sim(0)"}});
  }
}

}  // namespace tandem::bench
