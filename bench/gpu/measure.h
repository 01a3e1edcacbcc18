// What the gpu suite's workloads share: a record per (workload, system) with the median of
// rounds and every round's value, and the device's name.
#pragma once

#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "records.h"

namespace tandem::bench::gpu {

// Rounds per workload; the records hold their median.
inline constexpr int kRounds = 3;

// Where the workloads run: cuda(0), or sim(0) at tiny sizes for `bench_gpu --smoke` (a run of
// every code path without a GPU; its figures mean nothing and are written nowhere).
struct Target {
  Device device = cuda(0);
  bool smoke = false;
};
inline Target& target() {
  static Target value;
  return value;
}
// `n` on a GPU, `n / divisor` (at least 1) in a smoke run.
inline std::int64_t sized(std::int64_t n, std::int64_t divisor) {
  return target().smoke ? std::max<std::int64_t>(1, n / divisor) : n;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// A workload's rounds: their values in the order they ran, and the median the record holds.
// The rounds show what one run's median hides: a figure that moves from one call to the next
// (issue 22 saw dot at 1024 run at 3 to 19 TFLOP/s).
struct Measured {
  double value = 0;
  std::vector<double> rounds;
};

// kRounds calls of `round` (each returns the round's value).
template <class Round>
Measured median_of_rounds(Round&& round) {
  Measured measured;
  for (int i = 0; i < kRounds; ++i) measured.rounds.push_back(round());
  measured.value = median(measured.rounds);
  return measured;
}

// One record: the median in `unit` and each round's value; `higher_is_better` for rates (GB/s,
// TFLOP/s), false for times.
inline nlohmann::json gpu_record(const std::string& workload, const std::string& system,
                                 const Measured& measured, const std::string& unit,
                                 bool higher_is_better, const std::string& detail) {
  return {{"workload", workload},
          {"system", system},
          {"value", measured.value},
          {"round_values", measured.rounds},
          {"unit", unit},
          {"higher_is_better", higher_is_better},
          {"detail", detail},
          {"rounds", kRounds},
          {"device", device_name(target().device)}};
}

// The workloads, on cuda(0); `quick` shortens them (smaller copies, fewer repetitions).
void run_primitives(bool quick, Records& records);
void run_training(bool quick, Records& records);
// One lenet_bn epoch on the target, eager and hybridized, under the profiler: each one's trace,
// `tandem-trace summary` text and timeline go to `dir` as lenet_epoch_{eager,hybridized}.*.
void profile_training(const std::string& dir);

}  // namespace tandem::bench::gpu
