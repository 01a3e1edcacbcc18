// train_multi_device: data-parallel training of a LeNet or a small ResNet on the digits over 1,
// 2 or 4 devices, printing per epoch the loss, the accuracies, the time and how much of the
// gradient exchange was hidden behind compute.
//
//   build/examples/train_multi_device/train_multi_device [--devices N] [--model NAME]
//       [--epochs N] [--batch-size N] [--lr X] [--cuda] [--timeline PATH.svg]
//       [--trace PATH.json] [--data DIR] [--quick]
//
// Sim devices by default (TANDEM_SIM_DEVICES=4 for four; TANDEM_SIM_GFLOPS sets how slow their
// modelled compute is, TANDEM_MAX_OPS_IN_FLIGHT how far the host runs ahead: the timing
// settings are in docs/benchmarks.md, "multi_device"); --cuda trains on cuda(0..N-1).
// --timeline and --trace profile one more step after the epochs and draw it (SVG) or write its
// ops as a Chrome/Perfetto trace (tandem-trace reads it back).
// With fewer devices than asked it prints why and exits 0. The loop is in
// data_parallel_training.h; docs/user-guide.md ("Several devices: data parallel") walks
// through it.
#include <tandem/tandem.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include "data_parallel_training.h"

namespace {

struct Flags {
  tandem::examples::DataParallelOptions training;
  int devices = 2;
  int epochs = 10;
  bool cuda = false;
  std::string timeline;
  std::string trace;
  std::string data_dir = TANDEM_DIGITS_DIR;
};

int usage() {
  std::fprintf(stderr,
               "usage: train_multi_device [--devices N] [--model %s]\n"
               "                          [--epochs N] [--batch-size N] [--lr X] [--cuda]\n"
               "                          [--timeline PATH.svg] [--trace PATH.json] [--data DIR]\n"
               "                          [--quick]\n",
               tandem::examples::model_names().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  namespace ex = tandem::examples;
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--quick") {
      flags.epochs = 1;
    } else if (flag == "--devices" && has_value) {
      flags.devices = std::atoi(argv[++i]);
    } else if (flag == "--model" && has_value) {
      flags.training.model = argv[++i];
    } else if (flag == "--epochs" && has_value) {
      flags.epochs = std::atoi(argv[++i]);
    } else if (flag == "--batch-size" && has_value) {
      flags.training.batch_size = std::atoll(argv[++i]);
    } else if (flag == "--lr" && has_value) {
      flags.training.learning_rate = std::atof(argv[++i]);
    } else if (flag == "--cuda") {
      flags.cuda = true;
    } else if (flag == "--timeline" && has_value) {
      flags.timeline = argv[++i];
    } else if (flag == "--trace" && has_value) {
      flags.trace = argv[++i];
    } else if (flag == "--data" && has_value) {
      flags.data_dir = argv[++i];
    } else {
      return usage();
    }
  }
  if (flags.devices < 1 || flags.epochs < 1) return usage();
  const tandem::DeviceKind kind = flags.cuda ? tandem::DeviceKind::cuda : tandem::DeviceKind::sim;
  const int present = tandem::device_count(kind);
  if (present < flags.devices) {
    std::printf("train_multi_device: skipped: %d %s device(s) asked for, %d present%s\n",
                flags.devices, tandem::kind_name(kind), present,
                flags.cuda ? "" : " (set TANDEM_SIM_DEVICES)");
    return 0;
  }
  if (!tandem::data::digits_available(flags.data_dir)) {
    std::printf("train_multi_device: skipped: no digits data in %s (run scripts/fetch-digits.sh)\n",
                flags.data_dir.c_str());
    return 0;
  }
  try {
    flags.training.devices.clear();
    for (int d = 0; d < flags.devices; ++d) flags.training.devices.push_back({kind, d});
    ex::DataParallelTraining training(tandem::data::load_digits(flags.data_dir), flags.training);
    std::printf("%s on %d %s device(s), global batch %lld, %lld batches per epoch\n",
                flags.training.model.c_str(), flags.devices, tandem::kind_name(kind),
                static_cast<long long>(flags.training.batch_size),
                static_cast<long long>(training.batches_per_epoch()));
    std::printf("epoch   loss  train acc  test acc  seconds  exchange hidden\n");
    for (int epoch = 0; epoch < flags.epochs; ++epoch) {
      // The profiler runs on every epoch: its cost is a few stores per op.
      const ex::DataParallelEpoch result = training.run_epoch(/*profile=*/true);
      std::printf("%5d %6.4f %10.4f %9.4f %8.3f", result.epoch, result.loss, result.train_accuracy,
                  result.test_accuracy, result.seconds);
      if (flags.devices > 1) {
        std::printf("  %.3f (%.2f of %.2f ms)\n", result.exchange.hidden_fraction(),
                    result.exchange.hidden_ms, result.exchange.exchange_ms);
      } else {
        std::printf("  - (one device: no exchange)\n");
      }
    }
    if (!flags.timeline.empty() || !flags.trace.empty()) {
      training.run_epoch(/*profile=*/true, /*max_batches=*/1);
      if (!flags.timeline.empty()) {
        std::ofstream(flags.timeline) << tandem::profiler::timeline_svg(tandem::profiler::events());
        std::printf("timeline of one step written to %s\n", flags.timeline.c_str());
      }
      if (!flags.trace.empty()) {
        tandem::profiler::dump(flags.trace);
        std::printf("trace of one step written to %s\n", flags.trace.c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_multi_device: %s\n", e.what());
    return 1;
  }
  return 0;
}
