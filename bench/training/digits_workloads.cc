#include "digits_workloads.h"

#include <sys/wait.h>
#include <unistd.h>

#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
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
                         int epochs) {
  EpochsRun result;
  int fds[2];
  if (pipe(fds) != 0) {
    std::snprintf(result.error, sizeof result.error, "pipe: %s", std::strerror(errno));
    return result;
  }
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    EpochsRun run;
    try {
      const auto digits = data::load_digits(digits_dir);
      examples::DigitsTraining training(
          digits, {.model = model, .device = device, .schedule_epochs = epochs});
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
    } catch (const std::exception& e) {
      std::snprintf(run.error, sizeof run.error, "%s", e.what());
    }
    const ssize_t written = write(fds[1], &run, sizeof run);
    _exit(written == static_cast<ssize_t>(sizeof run) ? 0 : 1);
  }
  close(fds[1]);
  if (child < 0) {
    std::snprintf(result.error, sizeof result.error, "fork: %s", std::strerror(errno));
    close(fds[0]);
    return result;
  }
  const ssize_t got = read(fds[0], &result, sizeof result);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (got != static_cast<ssize_t>(sizeof result)) {
    result = EpochsRun{};
    std::snprintf(result.error, sizeof result.error, "the child died (status %d)", status);
  }
  return result;
}

}  // namespace

std::string lenet_workload_model() {
  return examples::make_model("lenet") ? "lenet" : "mlp";
}

void run_lenet_digits(const std::string& digits_dir, bool quick, Records& records) {
  // train_lenet's default recipe (training.h): lenet_bn, 1-pixel shifts, wd 5e-4, cosine.
  (void)quick;
  const std::string model = "lenet_bn";
  const int epochs = 20;
  std::vector<Device> devices{cpu()};
  if (!quick && device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
  for (const Device& device : devices) {
    const EpochsRun run = train_in_child(digits_dir, model, device, epochs);
    if (!run.ok) {
      std::fprintf(stderr, "lenet_digits on %s failed: %s\n", to_string(device).c_str(), run.error);
      continue;
    }
    std::printf(
        "lenet_digits (%s, %s, %d epochs, batch 64, SGD 0.1 momentum 0.9 wd 5e-4 cosine, shifts): "
        "test accuracy "
        "%.4f, %.3f s/epoch (first %.3f s), peak RSS %.1f MB\n",
        model.c_str(), to_string(device).c_str(), run.epochs, run.test_accuracy,
        run.seconds_per_epoch, run.first_epoch_seconds, run.peak_rss_mb);
    records.push_back({{"workload", "lenet_digits"},
                       {"system", "tandem"},
                       {"device", to_string(device)},
                       {"model", model},
                       {"test_accuracy", run.test_accuracy},
                       {"seconds_per_epoch", run.seconds_per_epoch},
                       {"first_epoch_seconds", run.first_epoch_seconds},
                       {"peak_rss_mb", run.peak_rss_mb},
                       {"epochs", run.epochs},
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
