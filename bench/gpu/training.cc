// The gpu suite's training workloads: one epoch of lenet_bn (train_lenet's default model) on
// digits-sized data, on cuda(0) and on tandem's own cpu, and the SGD step of a 64-256-128-10 MLP
// at batch 32, eager, hybridized (CUDA Graphs; with the eager error rule and failing as one
// unit) and as one replayed nn::TrainingStep.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "measure.h"
#include "models.h"
#include "tandem/profiler.h"

namespace tandem::bench::gpu {

namespace {

namespace nn = tandem::nn;

// The digits' training split: 1437 images of 8x8, labels 0..9 (random values: the epoch's cost
// does not depend on them, and the GPU machine need not have the data set).
constexpr std::int64_t kSamples = 1437;

// How a training step runs: eagerly; with the network hybridized (its forward and backward
// replayed, the loss and the update eager), with the eager error rule or failing as one unit
// (CaptureOptions::fail_as_one_unit: a device graph for the forward and one for the backward);
// or as one nn::TrainingStep (the whole step replayed).
enum class StepMode { eager, hybridized, hybridized_one_unit, whole_step };

void hybridize_for(StepMode mode, nn::Block& net) {
  if (mode == StepMode::hybridized) net.hybridize();
  if (mode == StepMode::hybridized_one_unit) net.hybridize(true, {.fail_as_one_unit = true});
}

// One epoch's seconds (the mean of `epochs` after a warm-up epoch) in `mode`. With
// `profile_dir`, the timed epochs run under the profiler and its trace, summary and timeline are
// written there as lenet_epoch_<label>.{json,txt,svg}.
double lenet_epoch_seconds(Device device, int epochs, StepMode mode,
                           const std::string& profile_dir = {}, const std::string& label = {}) {
  nd::random::seed(1);
  const nd::NDArray images = nd::random::uniform({kSamples, 8, 8});
  const nd::NDArray labels = nd::random::uniform(0, 10, {kSamples}).astype(nd::int32);
  auto net = examples::make_model("lenet_bn");
  net->initialize(nn::Xavier(), {device});
  hybridize_for(mode, *net);
  nn::Trainer trainer(net->collect_params(), nn::SGD(0.1));
  data::DataLoader loader(images, labels,
                          {.batch_size = 64, .shuffle = true, .seed = 1, .device = device});
  nn::TrainingStep step(*net, trainer, [](const nd::NDArray& output, const nd::NDArray& label) {
    return nd::sum(nd::softmax_cross_entropy(output, label));
  });
  auto epoch = [&] {
    for (const data::Batch& batch : loader) {
      if (mode == StepMode::whole_step) {
        (void)step(batch.data, batch.label, batch.data.shape()[0]);
        continue;
      }
      nd::NDArray loss;
      {
        auto recording = autograd::record();
        loss = nd::sum(nd::softmax_cross_entropy((*net)(batch.data), batch.label));
      }
      loss.backward();
      trainer.step(batch.data.shape()[0]);
    }
  };
  epoch();  // warm-up: parameters, pools, kernels, the hybridized graphs
  nd::waitall();
  if (!profile_dir.empty()) {
    profiler::clear();
    profiler::start();
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < epochs; ++i) epoch();
  nd::waitall();
  const double seconds = seconds_since(start) / epochs;
  if (!profile_dir.empty()) {
    profiler::stop();
    const std::vector<profiler::OpEvent> events = profiler::events();
    const std::string stem = profile_dir + "/lenet_epoch_" + label;
    profiler::dump(stem + ".json");
    std::ofstream(stem + ".txt") << "one epoch of lenet_bn, batch 64, on " << device_name(device)
                                 << ", " << label << ": " << seconds << " s\n\n"
                                 << profiler::summary(events);
    std::ofstream(stem + ".svg") << profiler::timeline_svg(events);
    std::printf("  profile of one epoch (%s) written to %s.{json,txt,svg}\n", label.c_str(),
                stem.c_str());
  }
  return seconds;
}

double mlp_step_us(StepMode mode, int steps) {
  nd::random::seed(2);
  nn::Sequential net;
  net.add(nn::Dense(256, nn::relu, {.in_units = 64}))
      .add(nn::Dense(128, nn::relu, {.in_units = 256}))
      .add(nn::Dense(10, nn::ActivationType::none, {.in_units = 128}));
  net.initialize(nn::Xavier(), {target().device});
  hybridize_for(mode, net);
  nn::Trainer trainer(net.collect_params(), nn::SGD(0.01));
  nn::TrainingStep whole(net, trainer, [](const nd::NDArray& output, const nd::NDArray& label) {
    return nd::mean(nd::softmax_cross_entropy(output, label));
  });
  const nd::NDArray x = nd::random::uniform({32, 64}, target().device);
  const nd::NDArray y = nd::random::uniform(0, 10, {32}, target().device).astype(nd::int32);
  auto step = [&] {
    if (mode == StepMode::whole_step) {
      (void)whole(x, y, 1);
      return;
    }
    nd::NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::mean(nd::softmax_cross_entropy(net(x), y));
    }
    loss.backward();
    trainer.step(1);
  };
  for (int i = 0; i < 3; ++i) step();  // records the hybridized graphs
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  nd::waitall();
  return seconds_since(start) * 1e6 / steps;
}

}  // namespace

void profile_training(const std::string& dir) {
  std::filesystem::create_directories(dir);
  lenet_epoch_seconds(target().device, 1, StepMode::eager, dir, "eager");
  lenet_epoch_seconds(target().device, 1, StepMode::hybridized, dir, "hybridized");
  lenet_epoch_seconds(target().device, 1, StepMode::hybridized_one_unit, dir,
                      "hybridized_one_unit");
  lenet_epoch_seconds(target().device, 1, StepMode::whole_step, dir, "whole_step");
}

void run_training(bool quick, Records& records) {
  auto add = [&](const std::string& workload, const char* system, const Measured& measured,
                 const char* unit, const std::string& detail) {
    std::printf("  %-22s %-10s %12.3f %s\n", workload.c_str(), system, measured.value, unit);
    std::fflush(stdout);
    records.push_back(gpu_record(workload, system, measured, unit, false, detail));
  };
  const std::string lenet = "lenet_bn, batch 64, 1437 8x8 images, SGD";
  const int epochs = quick ? 1 : 3;
  const auto lenet_epoch = [&](StepMode mode) {
    return median_of_rounds([&] { return lenet_epoch_seconds(target().device, epochs, mode); });
  };
  add("lenet_bn_epoch", "tandem", lenet_epoch(StepMode::eager), "s", lenet);
  add("lenet_bn_epoch_hybridized", "tandem", lenet_epoch(StepMode::hybridized), "s",
      lenet + ", hybridized");
  add("lenet_bn_epoch_hybridized_one_unit", "tandem", lenet_epoch(StepMode::hybridized_one_unit),
      "s", lenet + ", hybridized, failing as one unit");
  add("lenet_bn_epoch_whole_step", "tandem", lenet_epoch(StepMode::whole_step), "s",
      lenet + ", nn::TrainingStep (each step replayed whole)");
  add("lenet_bn_epoch", "tandem_cpu",
      median_of_rounds([&] { return lenet_epoch_seconds(cpu(), epochs, StepMode::eager); }), "s",
      lenet + ", on tandem's cpu");
  const int steps = static_cast<int>(sized(quick ? 200 : 1000, 20));
  const std::string mlp = "MLP 64-256-128-10, batch 32, softmax cross-entropy, SGD";
  add("mlp_step_eager", "tandem",
      median_of_rounds([&] { return mlp_step_us(StepMode::eager, steps); }), "us", mlp);
  add("mlp_step_hybridized", "tandem",
      median_of_rounds([&] { return mlp_step_us(StepMode::hybridized, steps); }), "us",
      mlp + ", hybridized");
  add("mlp_step_hybridized_one_unit", "tandem",
      median_of_rounds([&] { return mlp_step_us(StepMode::hybridized_one_unit, steps); }), "us",
      mlp + ", hybridized, failing as one unit");
  add("mlp_step_whole", "tandem",
      median_of_rounds([&] { return mlp_step_us(StepMode::whole_step, steps); }), "us",
      mlp + ", nn::TrainingStep (the whole step replayed)");
}

}  // namespace tandem::bench::gpu
