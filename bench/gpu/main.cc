// bench_gpu: tandem's CUDA path on cuda(0), the workloads of issue 22 side by side with PyTorch
// (bench/gpu/torch_peer.py adds the peer's records to the same file).
//
//   bench_gpu [--quick] [--profile DIR] --out PATH.json
//
// Writes a JSON list of records {"workload", "system": "tandem" | "tandem_cpu", "value",
// "round_values", "unit", "higher_is_better", "detail", "rounds", "device"}, each value the
// median of 3 rounds (round_values: each round's, in order):
//   add_n1_async, add_n1_wait     y = y + 1 on one element, 1000 dependent ops (us per op),
//                                 waiting once at the end or after every op
//   add_4M_async/sync, add_64M_async/sync   y = x + 1 at 4e6 and 64 M float32 (GB/s moved)
//   bcast_add_, sum_, mean_, sum_rows_, sum_cols_, softmax_ 4M and 64M   x + row, x.sum(),
//                                 x.mean(), x.sum(-1), x.sum(0), softmax(x, -1) on 4000 x 1000
//                                 and 65536 x 1024 float32 matrices (GB/s read and written)
//   dot_1024, dot_4096, dot_8192  square float32 products (TFLOP/s)
//   h2d/d2h_pageable/pinned       1 GiB copies (256 MiB with --quick) (GB/s)
//   conv_fwd, conv_bwd_data, conv_bwd_weight   batch 256, 64 -> 64 channels, 3x3, 28x28 (ms)
//   conv_lenet_fwd/_bwd_data/_bwd_weight   lenet_bn's second convolution, batch 64, 16 -> 32
//                                 channels, 3x3, 4x4 (us per call, calls queued, one wait)
//   lenet_bn_epoch(_hybridized)   one epoch of lenet_bn, batch 64, on 1437 8x8 images (s), on
//                                 cuda(0) and (tandem_cpu) on the cpu
//   lenet_bn_epoch_hybridized_one_unit   the same epoch hybridized with {.fail_as_one_unit}
//   lenet_bn_epoch_whole_step     the same epoch, each step an nn::TrainingStep replay
//   mlp_step_eager/_hybridized(_one_unit)   a 64-256-128-10 MLP's SGD step at batch 32 (us),
//                                 eager and with the network hybridized (as above)
//   mlp_step_whole                the same step as one replayed nn::TrainingStep (bench/gpu/
//                                 jax_peer.py adds a jax.jit step beside it)
// --profile DIR: afterwards, one epoch of lenet_bn per mode under the profiler, each written to
// DIR as lenet_epoch_{eager,hybridized,hybridized_one_unit,whole_step}.{json,txt,svg} (trace,
// summary, timeline).
// Without a CUDA device it prints "skipped: no CUDA device", writes nothing and exits 0.
// `bench_gpu --smoke --out PATH` runs every workload on sim(0) at tiny sizes instead: a check of
// the suite's code without a GPU (its figures mean nothing).
// Usually run through bench/run.sh gpu, or scripts/gpu-check.sh on a GPU machine.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "measure.h"
#include "suite_main.h"

int main(int argc, char** argv) {
  tandem::bench::SuiteCommandLine line;
  std::string profile_dir;
  std::vector<char*> arguments(argv, argv + argc);
  const auto smoke = std::find_if(arguments.begin(), arguments.end(),
                                  [](const char* a) { return std::strcmp(a, "--smoke") == 0; });
  if (smoke != arguments.end()) {
    arguments.erase(smoke);
    tandem::bench::gpu::target() = {.device = tandem::sim(0), .smoke = true};
  }
  if (!tandem::bench::parse_suite_command_line(
          static_cast<int>(arguments.size()), arguments.data(), "bench_gpu",
          "[--quick] [--smoke] [--profile DIR] --out PATH.json", line,
          {{"--profile", &profile_dir}})) {
    return 2;
  }
  const bool smoke_run = tandem::bench::gpu::target().smoke;
  if (!smoke_run && tandem::device_count(tandem::DeviceKind::cuda) == 0) {
    std::printf("bench_gpu: skipped: no CUDA device (tandem::device_count(cuda) is 0)\n");
    return 0;
  }
  std::printf("bench_gpu on %s%s\n",
              tandem::device_name(tandem::bench::gpu::target().device).c_str(),
              smoke_run ? " (smoke run: tiny sizes, figures meaningless)" : "");
  return tandem::bench::run_suite("bench_gpu", line.out, [&](tandem::bench::Records& records) {
    tandem::bench::gpu::run_primitives(line.quick, records);
    tandem::bench::gpu::run_training(line.quick, records);
    if (!profile_dir.empty()) tandem::bench::gpu::profile_training(profile_dir);
  });
}
