// bench_conv_shapes: per-call time of conv2d, conv2d_backward_data and conv2d_backward_weight at
// each distinct convolution of d2l's ResNet-18 on 28x28 inputs (bench_resnet18's model), on
// cpu(0), float32. Each figure is the fastest of --reps calls after one warm-up call, each call
// waited for (the fastest: the machine these run on is shared).
//
//   build-bench/bench/training/bench_conv_shapes [--batch 16] [--reps 9]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tandem/tandem.h"

namespace nd = tandem::nd;

namespace {

struct ConvShape {
  const char* name;
  std::int64_t channels, size, out_channels, kernel, stride, padding;
};

// The stem, each stage's first (strided) and later 3x3 convolutions, and the 1x1 shortcuts.
const ConvShape kShapes[] = {
    {"stem 1->64 3x3 @28", 1, 28, 64, 3, 1, 1},
    {"s1 64->64 3x3 @28", 64, 28, 64, 3, 1, 1},
    {"s2 64->128 3x3/2 @28", 64, 28, 128, 3, 2, 1},
    {"s2 128->128 3x3 @14", 128, 14, 128, 3, 1, 1},
    {"s2 64->128 1x1/2 @28", 64, 28, 128, 1, 2, 0},
    {"s3 128->256 3x3/2 @14", 128, 14, 256, 3, 2, 1},
    {"s3 256->256 3x3 @7", 256, 7, 256, 3, 1, 1},
    {"s3 128->256 1x1/2 @14", 128, 14, 256, 1, 2, 0},
    {"s4 256->512 3x3/2 @7", 256, 7, 512, 3, 2, 1},
    {"s4 512->512 3x3 @4", 512, 4, 512, 3, 1, 1},
    {"s4 256->512 1x1/2 @7", 256, 7, 512, 1, 2, 0},
};

template <class Fn>
double best_ms(int reps, Fn&& fn) {
  fn().wait_to_read();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn().wait_to_read();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(times.begin(), times.end());
  return times.front();
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 16;
  int reps = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--batch") == 0)
      batch = std::atoll(argv[i + 1]);
    else if (std::strcmp(argv[i], "--reps") == 0)
      reps = std::atoi(argv[i + 1]);
  }
  std::printf("%-24s %10s %10s %10s  (ms per call, batch %lld)\n", "convolution", "forward",
              "bwd_data", "bwd_weight", static_cast<long long>(batch));
  double total[3] = {0, 0, 0};
  for (const ConvShape& s : kShapes) {
    const nd::Shape x_shape{batch, s.channels, s.size, s.size};
    const nd::Shape w_shape{s.out_channels, s.channels, s.kernel, s.kernel};
    const nd::Conv2dOptions o{.stride = s.stride, .padding = s.padding};
    const nd::NDArray x = nd::random::normal(x_shape);
    const nd::NDArray w = nd::random::normal(w_shape, {.stddev = 0.01});
    const nd::NDArray dy = nd::random::normal(nd::conv2d_output_shape(x_shape, w_shape, o));
    const double t[3] = {
        best_ms(reps, [&] { return nd::conv2d(x, w, o); }),
        best_ms(reps, [&] { return nd::conv2d_backward_data(dy, w, x_shape, o); }),
        best_ms(reps, [&] { return nd::conv2d_backward_weight(dy, x, w_shape, o); }),
    };
    for (int i = 0; i < 3; ++i) total[i] += t[i];
    std::printf("%-24s %10.2f %10.2f %10.2f\n", s.name, t[0], t[1], t[2]);
  }
  std::printf("%-24s %10.2f %10.2f %10.2f\n", "sum", total[0], total[1], total[2]);
  return 0;
}
