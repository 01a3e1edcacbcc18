// Times one training step of a LeNet-sized convolution layer: forward (conv2d with bias, then
// max pooling) and backward (the gradients of x, the weights, the bias, through the pooling),
// at batch 256 in float32, on the CPU and on sim(0). The layer is LeNet-5's second one:
// 6 -> 16 channels, 5x5 kernel, 14x14 input, 2x2 max pooling.
//
//   ./conv_layer            # 20 steps per device
//   ./conv_layer --quick    # 3 steps, batch 32: the smoke test
#include <tandem/tandem.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <vector>

#include "example_support.h"

namespace nd = tandem::nd;

namespace {

// Queues `steps` forward + backward passes on `device`; returns the seconds per step.
double time_steps(tandem::Device device, std::int64_t batch, int steps) {
  const nd::NDArray x = nd::random::normal({batch, 6, 14, 14}, device);
  const nd::NDArray w = nd::random::normal({16, 6, 5, 5}, {.stddev = 0.1, .device = device});
  const nd::NDArray b = nd::zeros({16}, nd::float32, device);
  const nd::Pool2dOptions pool{.kernel = 2};
  const auto step = [&] {
    const nd::NDArray y = nd::conv2d(x, w, b);  // batch x 16 x 10 x 10
    const nd::NDArray p = nd::max_pool2d(y, pool);
    const nd::NDArray dy = nd::max_pool2d_backward(nd::ones_like(p), y, pool);
    return std::array{nd::conv2d_backward_data(dy, w, x.shape()),
                      nd::conv2d_backward_weight(dy, x, w.shape()), nd::conv2d_backward_bias(dy)};
  };
  step();  // warm-up: allocations, BLAS buffers
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  nd::waitall();
  return tandem_example::seconds_since(start) / steps;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tandem_example::has_flag(argc, argv, "--quick");
  const std::int64_t batch = quick ? 32 : 256;
  const int steps = quick ? 3 : 20;
  std::printf("conv 6->16 5x5 on %lldx6x14x14 + 2x2 max pool, float32, forward + backward\n",
              static_cast<long long>(batch));
  std::vector<tandem::Device> devices{tandem::cpu()};
  if (tandem::device_count(tandem::DeviceKind::sim) > 0) devices.push_back(tandem::sim(0));
  if (tandem::device_count(tandem::DeviceKind::cuda) > 0) devices.push_back(tandem::cuda(0));
  for (const tandem::Device device : devices) {
    std::printf("  %-8s %8.2f ms per step\n", tandem::to_string(device).c_str(),
                1e3 * time_steps(device, batch, steps));
  }
  return 0;
}
