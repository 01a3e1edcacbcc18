#include "digits_workloads.h"

#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "memory_probe.h"
#include "training.h"

namespace tandem::bench {

namespace {

struct EpochsRun {
  bool ok = false;
  int epochs = 0;
  double test_accuracy = 0;
  double seconds_per_epoch = 0;  // the mean over the epochs after the first
  double first_epoch_seconds = 0;
  double peak_rss_mb = 0;
  char error[160] = {};
};

// Trains in a forked child (a fresh process: its peak RSS is this training's) and returns what
// it measured.
EpochsRun train_in_child(const std::string& digits_dir, const std::string& model, Device device,
                         int epochs, std::uint64_t seed) {
  return examples::run_in_child_process<EpochsRun>([&](EpochsRun& run) {
    const auto digits = data::load_digits(digits_dir);
    examples::DigitsTraining training(
        digits, {.model = model, .device = device, .seed = seed, .schedule_epochs = epochs});
    double later_seconds = 0;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      const examples::EpochResult e = training.run_epoch();
      if (epoch == 0) {
        run.first_epoch_seconds = e.seconds;
      } else {
        later_seconds += e.seconds;
      }
      run.test_accuracy = e.test_accuracy;
    }
    run.epochs = epochs;
    run.seconds_per_epoch = epochs > 1 ? later_seconds / (epochs - 1) : run.first_epoch_seconds;
    run.peak_rss_mb = examples::status_mb("VmHWM");
    run.ok = true;
  });
}

}  // namespace

std::string lenet_workload_model() {
  return examples::make_model("lenet") ? "lenet" : "mlp";
}

void run_lenet_digits(const std::string& digits_dir, bool quick, Records& records) {
  // train_lenet's default recipe (training.h: 1-pixel shifts, wd 5e-4, cosine lr, 20 epochs)
  // on its default LeNet-style model and on the small ResNet, each from several seeds (initial
  // weights and shuffling): on 300 test images one seed's accuracy moves by +-1%, so a single
  // seed says little. The records give the mean and the worst seed.
  constexpr int kEpochs = 20, kSeeds = 5;
  struct Config {
    std::string model;
    Device device;
  };
  std::vector<Config> configs{{"lenet_bn", cpu()}, {"resnet", cpu()}};
  if (!quick && device_count(DeviceKind::sim) > 0) configs.push_back({"lenet_bn", sim(0)});
  for (const Config& config : configs) {
    std::vector<double> accuracies;
    double seconds_per_epoch = 0, first_epoch_seconds = 0, peak_rss_mb = 0;
    for (int seed = 1; seed <= kSeeds; ++seed) {
      const EpochsRun run = train_in_child(digits_dir, config.model, config.device, kEpochs,
                                           static_cast<std::uint64_t>(seed));
      if (!run.ok) {
        std::fprintf(stderr, "lenet_digits (%s on %s, seed %d) failed: %s\n", config.model.c_str(),
                     to_string(config.device).c_str(), seed, run.error);
        continue;
      }
      accuracies.push_back(run.test_accuracy);
      seconds_per_epoch += run.seconds_per_epoch;
      first_epoch_seconds += run.first_epoch_seconds;
      peak_rss_mb = std::max(peak_rss_mb, run.peak_rss_mb);
    }
    if (accuracies.empty()) continue;
    const double runs = static_cast<double>(accuracies.size());
    double mean = 0;
    for (const double a : accuracies) mean += a / runs;
    const double worst = *std::min_element(accuracies.begin(), accuracies.end());
    std::printf(
        "lenet_digits (%s, %s, %d epochs, batch 64, SGD 0.1 momentum 0.9 wd 5e-4 cosine, "
        "shifts, %zu seeds): test accuracy mean %.4f, worst %.4f, %.3f s/epoch (first %.3f s), "
        "peak RSS %.1f MB\n",
        config.model.c_str(), to_string(config.device).c_str(), kEpochs, accuracies.size(), mean,
        worst, seconds_per_epoch / runs, first_epoch_seconds / runs, peak_rss_mb);
    records.push_back({{"workload", "lenet_digits"},
                       {"system", "tandem"},
                       {"device", to_string(config.device)},
                       {"model", config.model},
                       {"test_accuracy", mean},
                       {"test_accuracy_worst", worst},
                       {"test_accuracy_per_seed", accuracies},
                       {"seconds_per_epoch", seconds_per_epoch / runs},
                       {"first_epoch_seconds", first_epoch_seconds / runs},
                       {"peak_rss_mb", peak_rss_mb},
                       {"epochs", kEpochs},
                       {"batch_size", 64},
                       {"recipe", "shift 1, wd 5e-4, cosine lr"}});
  }
}

void run_lenet_step(const std::string& digits_dir, bool quick, Records& records) {
  constexpr std::int64_t kBatch = 256;
  const std::string model = lenet_workload_model();
  const auto digits = data::load_digits(digits_dir);
  auto net = examples::make_model(model);
  nd::random::seed(1);
  net->initialize(nn::Xavier());
  const nd::NDArray x = digits.train.images.slice(0, kBatch).copy();
  const nd::NDArray y = digits.train.labels.slice(0, kBatch).copy();
  (*net)(x);
  nn::Trainer trainer(net->collect_params(), nn::SGD(0.1, 0.9));
  const auto step = [&] {
    nd::NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::softmax_cross_entropy((*net)(x), y).sum();
    }
    loss.backward();
    trainer.step(kBatch);
  };
  for (int i = 0; i < 5; ++i) step();
  nd::waitall();
  const int steps = quick ? 200 : 500;
  std::vector<double> times;
  for (int round = 0; round < 3; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    nd::waitall();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps);
  }
  std::sort(times.begin(), times.end());
  std::printf("lenet_step (%s, batch %lld): %.1f us per step\n", model.c_str(),
              static_cast<long long>(kBatch), times[1] * 1e6);
  records.push_back({{"workload", "lenet_step"},
                     {"system", "tandem"},
                     {"device", "cpu(0)"},
                     {"model", model},
                     {"batch_size", kBatch},
                     {"seconds_per_step", times[1]},
                     {"steps", steps}});
}

}  // namespace tandem::bench
