// multi_device: the seeds' data parallelism on several devices (d2l 8.4, "multiple GPUs from
// scratch"), on sim(0) and sim(1) (cuda devices with --cuda).
//
//   build/examples/multi_device/multi_device [--quick] [--cuda]
//
// A batch is split along its first axis and each part loaded onto its own device
// (nd::split_and_load); every device computes its part of a linear layer's gradient-like product;
// the parts are summed on device 0 (nd::allreduce: peer copies on the copy_d2d streams, then adds)
// and the sum copied back to every device. Each device's work is queued without a wait, so the
// devices compute at the same time; the program checks the sum against the one-device result.
#include <tandem/tandem.h>

#include "example_support.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace nd = tandem::nd;

using tandem_example::seconds_since;

int main(int argc, char** argv) {
  const bool quick = tandem_example::has_flag(argc, argv, "--quick");
  const bool use_cuda = tandem_example::has_flag(argc, argv, "--cuda");
  const tandem::DeviceKind kind = use_cuda ? tandem::DeviceKind::cuda : tandem::DeviceKind::sim;
  const int count = std::min(2, tandem::device_count(kind));
  if (count < 1) {
    std::printf("SKIPPED: no %s device\n", tandem::kind_name(kind));
    return 0;
  }
  std::vector<tandem::Device> devices;
  for (int i = 0; i < count; ++i) devices.push_back(tandem::Device{kind, i});
  const std::int64_t batch_rows = quick ? 256 : 1024, features = quick ? 128 : 256;
  const nd::NDArray batch = nd::random::uniform({batch_rows, features});
  const nd::NDArray weights = nd::random::normal({features, features});
  const nd::NDArray expected = nd::dot(batch.T(), nd::dot(batch, weights));

  for (int step = 0; step < 3; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<nd::NDArray> parts = nd::split_and_load(batch, devices);
    std::vector<nd::NDArray> grads;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const nd::NDArray w = weights.copyto(devices[i]);
      grads.push_back(nd::dot(parts[i].T(), nd::dot(parts[i], w)));
    }
    nd::allreduce(grads);
    nd::waitall();
    const double difference = nd::abs(grads.back().copyto(tandem::cpu()) - expected).max().scalar();
    std::printf("step %d on %d device(s): %.4f sec, max |allreduced - one-device| = %.2e\n", step,
                count, seconds_since(start), difference);
    if (!(difference <= 1e-3 * std::max(1.0, expected.norm().scalar() / features))) {
      std::printf("mismatch\n");
      return 1;
    }
  }
  for (const tandem::Device& d : devices) std::printf("%s\n", tandem::device_name(d).c_str());
  return 0;
}
