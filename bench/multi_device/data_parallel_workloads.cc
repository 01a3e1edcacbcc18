// Data-parallel training on 1, 2 and 4 sim devices (issue 14): train_multi_device's loop
// (examples/train_multi_device/data_parallel_training.h) on lenet_bn with a global batch of 128,
// timed per epoch, with the fraction of the gradient exchange hidden behind the backward's compute
// from one profiled epoch (examples/train_multi_device/exchange_overlap.h says what counts). The
// same loop with one allreduce per parameter (no buckets) and with the exchange left to
// Trainer::step (at_step) is recorded beside it, to show what buckets and starting the exchange
// from inside backward buy.
//
// The sim model comes from the environment (bench/run.sh multi_device sets it; see
// docs/benchmarks.md, "multi_device"): the figures mean something only when the modelled device
// time dominates the host's real work, which a slow sim compute rate ensures.
#include <tandem/tandem.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "data_parallel_training.h"
#include "workloads.h"

namespace tandem::bench {

namespace {

constexpr const char* kModel = "lenet_bn";
constexpr std::int64_t kGlobalBatch = 128;

struct DataParallelFigures {
  double seconds_per_epoch = 0;  // median over the timed epochs
  double exchange_hidden = 0;    // from the profiled epoch
  double exchange_ms = 0;
  double test_accuracy = 0;
  double loss = 0;
  std::int64_t batches_per_epoch = 0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// How a run sums the gradients: the record's workload and exchange fields say which.
struct ExchangeVariant {
  nn::GradientExchangeMode mode;
  std::size_t bucket_bytes;
  const char* workload;
  const char* label;
};

DataParallelFigures measure(const data::DigitsDataSet& digits, int devices,
                            const ExchangeVariant& exchange, int timed_epochs) {
  examples::DataParallelOptions options;
  options.model = kModel;
  options.batch_size = kGlobalBatch;
  options.exchange = exchange.mode;
  options.bucket_bytes = exchange.bucket_bytes;
  options.devices.clear();
  for (int d = 0; d < devices; ++d) options.devices.push_back(sim(d));
  examples::DataParallelTraining training(digits, options);
  // Warm-up: the memory pools grow, the first-use costs are paid.
  training.run_epoch(/*profile=*/false, /*max_batches=*/3);
  std::vector<double> seconds;
  examples::DataParallelEpoch last;
  for (int e = 0; e < timed_epochs; ++e) {
    last = training.run_epoch();
    seconds.push_back(last.seconds);
  }
  const examples::DataParallelEpoch profiled = training.run_epoch(/*profile=*/true);
  DataParallelFigures figures;
  figures.seconds_per_epoch = median(seconds);
  figures.exchange_hidden = profiled.exchange.hidden_fraction();
  figures.exchange_ms = profiled.exchange.exchange_ms;
  figures.test_accuracy = profiled.test_accuracy;
  figures.loss = profiled.loss;
  figures.batches_per_epoch = training.batches_per_epoch();
  return figures;
}

}  // namespace

void run_data_parallel(const MultiDeviceOptions& options, Records& records) {
  if (!data::digits_available(options.digits_dir)) {
    std::printf("data_parallel: skipped: no digits data in %s (scripts/fetch-digits.sh)\n",
                options.digits_dir.c_str());
    return;
  }
  const data::DigitsDataSet digits = data::load_digits(options.digits_dir);
  const int timed_epochs = options.quick ? 2 : 5;
  const int present = device_count(DeviceKind::sim);
  double one_device = 0;
  for (const int devices : {1, 2, 4}) {
    if (present < devices) {
      std::printf("data_parallel: %d sim devices skipped: %d present (TANDEM_SIM_DEVICES)\n",
                  devices, present);
      continue;
    }
    // The default (buckets of nn::GradientExchangeOptions' size), one allreduce per parameter,
    // and the sums left to Trainer::step.
    const std::size_t default_bucket = nn::GradientExchangeOptions{}.bucket_bytes;
    const ExchangeVariant variants[] = {{nn::GradientExchangeMode::during_backward, default_bucket,
                                         "data_parallel", "during_backward"},
                                        {nn::GradientExchangeMode::during_backward, 0,
                                         "data_parallel_no_buckets", "during_backward, no buckets"},
                                        {nn::GradientExchangeMode::at_step, default_bucket,
                                         "data_parallel_exchange_at_step", "at_step"}};
    for (const ExchangeVariant& variant : variants) {
      const bool overlapped = variant.mode == nn::GradientExchangeMode::during_backward;
      const bool main_variant = variant.bucket_bytes == default_bucket && overlapped;
      if (devices == 1 && !main_variant) continue;  // one device exchanges nothing
      const DataParallelFigures figures = measure(digits, devices, variant, timed_epochs);
      if (devices == 1) one_device = figures.seconds_per_epoch;
      const double speedup = one_device > 0 ? one_device / figures.seconds_per_epoch : 0.0;
      std::printf(
          "data_parallel: %d device(s), exchange %-27s %.3f s/epoch (x%.2f), exchange hidden "
          "%.3f of %.2f ms, test accuracy %.4f\n",
          devices, variant.label, figures.seconds_per_epoch, speedup, figures.exchange_hidden,
          figures.exchange_ms, figures.test_accuracy);
      nlohmann::json record = {
          {"workload", variant.workload},
          {"system", "tandem"},
          {"devices", devices},
          {"exchange", variant.label},
          {"bucket_bytes", overlapped ? nlohmann::json(variant.bucket_bytes) : nullptr},
          {"model", kModel},
          {"global_batch", kGlobalBatch},
          {"batches_per_epoch", figures.batches_per_epoch},
          {"timed_epochs", timed_epochs},
          {"seconds_per_epoch", figures.seconds_per_epoch},
          {"speedup_vs_one_device", speedup},
          {"exchange_hidden", devices > 1 ? nlohmann::json(figures.exchange_hidden) : nullptr},
          {"exchange_ms_per_epoch", figures.exchange_ms},
          {"test_accuracy", figures.test_accuracy},
          {"loss", figures.loss}};
      record.update(sim_settings_record());
      // How far the host may run ahead of the devices matters here (docs/benchmarks.md).
      record["max_ops_in_flight"] = EngineConfig::from_env().max_ops_in_flight;
      records.push_back(record);
      if (!main_variant) continue;
      if (devices == 2) {
        records.push_back(target_record("data_parallel: 2 sim devices vs 1 (seconds per epoch)",
                                        ">= 1.85x", speedup, 1.85, false));
      } else if (devices == 4) {
        records.push_back(target_record("data_parallel: 4 sim devices vs 1 (seconds per epoch)",
                                        ">= 3.4x", speedup, 3.4, false));
      }
      if (devices > 1) {
        records.push_back(target_record("data_parallel: exchange hidden behind backward compute, " +
                                            std::to_string(devices) + " devices",
                                        ">= 0.8", figures.exchange_hidden, 0.8, false));
      }
    }
  }
}

}  // namespace tandem::bench
