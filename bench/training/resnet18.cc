// bench_resnet18: d2l's ResNet-18 (nn::models::resnet18, 28x28 inputs, Normal(0.01), SGD lr 0.1,
// softmax cross entropy), the network of the seeds' concise multi-device chapter (issue 25).
//
//   bench_resnet18 --out PATH.json [--quick] [--batch N] [--steps N] [--dp-batch N]
//       [--trace PATH.json]   (a Chrome trace of the largest data-parallel run's steps)
//       [--devices N[,N...]]  (the data-parallel runs to make, of 1, 2, 4; default all three)
//       [--no-cpu-step]
//
// Records (a JSON list; bench/training/jax_resnet18.py adds the JAX peer's and the targets):
//   {"workload": "resnet18_step", "system": "tandem", "device": "cpu(0)", "batch_size",
//    "seconds_per_step" (median), "steps"}
//   {"workload": "resnet18_data_parallel", "system": "tandem", "devices": 1 | 2 | 4,
//    "batch_size" (global), "seconds_per_step" (median), "exchange_hidden", "ops_per_step",
//    "sim_gflops"}
// The data-parallel rows run on sim devices (as many of 1, 2, 4 as are present; run.sh sets
// TANDEM_SIM_DEVICES=4 and a sim compute rate slow enough that modelled device time dominates
// the host's real work: docs/benchmarks.md, "ResNet-18"), with the Trainer's exchange during
// backward; exchange_hidden is train_multi_device's figure (exchange_overlap.h).
#include <tandem/nn/nn.h>
#include <tandem/profiler.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "exchange_overlap.h"
#include "records.h"

namespace {

namespace nd = tandem::nd;
namespace nn = tandem::nn;
using tandem::Device;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct StepTimes {
  double seconds_per_step = 0;
  double exchange_hidden = 0;
  std::uint64_t ops_per_step = 0;  // engine ops pushed by one step (all devices)
};

// Times `steps` steps of ResNet-18 with the global batch `batch` split over `devices` (each step
// waited for: the median of the steps' times); profiles them when there are several devices.
StepTimes time_steps(const std::vector<Device>& devices, std::int64_t batch, int steps,
                     const std::string& trace = {}) {
  nd::random::seed(1);
  auto net = nn::models::resnet18(10);
  net->initialize(nn::Normal(0.01), devices);
  nn::Trainer trainer(net->collect_params(), nn::SGD(0.1),
                      {.exchange = nn::GradientExchangeMode::during_backward});
  const nd::NDArray x = nd::random::uniform({batch, 1, 28, 28});
  std::vector<std::int32_t> label_values(static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < label_values.size(); ++i) label_values[i] = static_cast<int>(i % 10);
  const nd::NDArray y = nd::from_vector(label_values);
  const std::vector<nd::NDArray> xs = nd::split_and_load(x, devices, false);
  const std::vector<nd::NDArray> ys = nd::split_and_load(y, devices, false);
  tandem::examples::BackwardWindows windows;
  const auto step = [&] {
    std::vector<nd::NDArray> losses;
    {
      auto recording = tandem::autograd::record();
      for (std::size_t d = 0; d < devices.size(); ++d) {
        losses.push_back(nd::softmax_cross_entropy((*net)(xs[d]), ys[d]).sum());
      }
    }
    windows.begin();
    for (const nd::NDArray& loss : losses) loss.backward();
    windows.end();
    trainer.step(batch);
  };
  step();  // deferred shapes, first allocations
  nd::waitall();
  const bool profile = devices.size() > 1;
  if (profile) {
    tandem::profiler::start();
    windows.start();
  }
  std::vector<double> times;
  const std::uint64_t pushed_before = tandem::Engine::get().stats().ops_pushed;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    nd::waitall();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  StepTimes result{median(times), 0,
                   (tandem::Engine::get().stats().ops_pushed - pushed_before) /
                       static_cast<std::uint64_t>(steps)};
  if (profile) {
    tandem::profiler::stop();
    if (!trace.empty()) tandem::profiler::dump(trace);
    result.exchange_hidden =
        tandem::examples::exchange_overlap(tandem::profiler::events(), windows).hidden_fraction();
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, trace;
  bool quick = false;
  std::int64_t batch = 16, dp_batch = 8;
  int steps = 5;
  bool cpu_step = true;
  std::vector<int> device_counts{1, 2, 4};
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--out" && has_value) {
      out = argv[++i];
    } else if (flag == "--trace" && has_value) {
      trace = argv[++i];  // the profiled steps of the largest data-parallel run
    } else if (flag == "--devices" && has_value) {
      device_counts.clear();
      for (const char* p = argv[++i]; *p != '\0';) {
        char* end = nullptr;
        device_counts.push_back(static_cast<int>(std::strtol(p, &end, 10)));
        if (end == p || device_counts.back() < 1) return 2;
        p = *end == ',' ? end + 1 : end;
      }
    } else if (flag == "--no-cpu-step") {
      cpu_step = false;
    } else if (flag == "--quick") {
      quick = true;
    } else if (flag == "--batch" && has_value) {
      batch = std::atoll(argv[++i]);
    } else if (flag == "--dp-batch" && has_value) {
      dp_batch = std::atoll(argv[++i]);
    } else if (flag == "--steps" && has_value) {
      steps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: bench_resnet18 --out PATH.json [--quick] [--batch N] [--steps N] "
                   "[--dp-batch N] [--trace PATH.json] [--devices N[,N...]] [--no-cpu-step]\n");
      return 2;
    }
  }
  if (out.empty() || batch < 1 || dp_batch < 4 || steps < 1 || device_counts.empty()) return 2;
  if (quick) steps = std::min(steps, 3);
  tandem::bench::Records records;
  if (cpu_step) {
    const StepTimes cpu = time_steps({tandem::cpu()}, batch, steps);
    std::printf("resnet18_step cpu(0), batch %lld: %.3f s per step\n",
                static_cast<long long>(batch), cpu.seconds_per_step);
    std::fflush(stdout);
    records.push_back({{"workload", "resnet18_step"},
                       {"system", "tandem"},
                       {"device", "cpu(0)"},
                       {"batch_size", batch},
                       {"seconds_per_step", cpu.seconds_per_step},
                       {"steps", steps}});
  }
  const char* gflops = std::getenv("TANDEM_SIM_GFLOPS");
  const int largest = *std::max_element(device_counts.begin(), device_counts.end());
  for (const int count : device_counts) {
    if (tandem::device_count(tandem::DeviceKind::sim) < count) break;
    std::vector<Device> devices;
    for (int d = 0; d < count; ++d) devices.push_back(tandem::sim(d));
    const StepTimes dp = time_steps(
        devices, dp_batch, steps,
        count == std::min(largest, tandem::device_count(tandem::DeviceKind::sim)) ? trace : "");
    std::printf(
        "resnet18_data_parallel %d sim device(s), batch %lld: %.3f s per step, "
        "exchange hidden %.3f, %llu ops per step\n",
        count, static_cast<long long>(dp_batch), dp.seconds_per_step, dp.exchange_hidden,
        static_cast<unsigned long long>(dp.ops_per_step));
    std::fflush(stdout);
    records.push_back({{"workload", "resnet18_data_parallel"},
                       {"system", "tandem"},
                       {"devices", count},
                       {"batch_size", dp_batch},
                       {"seconds_per_step", dp.seconds_per_step},
                       {"exchange_hidden", dp.exchange_hidden},
                       {"ops_per_step", dp.ops_per_step},
                       {"sim_gflops", gflops != nullptr ? std::atof(gflops) : 1000.0},
                       {"steps", steps}});
  }
  return tandem::bench::write_records(records, out, "bench_resnet18") ? 0 : 1;
}
