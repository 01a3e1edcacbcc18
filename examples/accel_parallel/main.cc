// accel_parallel: the seeds' "automatic parallelism" across devices (d2l 8.3.1 and 8.3.2) with
// tandem, on sim(0) (or gpu(0) with --cuda on a machine with a GPU).
//
//   build/examples/accel_parallel/accel_parallel [--quick] [--cuda]
//
// run(x) queues 10 products dot(x, x). Run on the CPU, then on the accelerator, each followed
// by waitall(); then both without a wait in between: the engine sees that the two lists share
// no array, so the CPU workers and the accelerator's compute stream work at the same time and
// the total is close to the longer of the two, not their sum. Then compute on the accelerator
// and copy each result back to the CPU: y[i] is copied on the D2H copy stream while y[i + 1]
// is computed, so run-and-copy takes less than run-then-copy.
//
// sim(0) is slowed down here (configure_accelerators, before its first use) so its modelled
// kernel times are long next to the real CPU time its kernels take on this machine.
#include <tandem/tandem.h>

#include <cstdio>
#include <utility>
#include <vector>

#include "example_support.h"
#include "tandem/accel/accelerator.h"

namespace nd = tandem::nd;

namespace {

using tandem_example::run;

std::vector<nd::NDArray> copy_to_cpu(const std::vector<nd::NDArray>& arrays) {
  std::vector<nd::NDArray> copies;
  for (const nd::NDArray& a : arrays) copies.push_back(a.copyto(tandem::cpu()));
  return copies;
}

// The seeds' Benchmark, with their label width.
template <class Body>
double benchmark(const char* label, Body&& body) {
  return tandem_example::benchmark(label, 40, std::forward<Body>(body));
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tandem_example::has_flag(argc, argv, "--quick");
  const bool use_cuda = tandem_example::has_flag(argc, argv, "--cuda");
  if (!use_cuda) {
    tandem::AcceleratorConfig config = tandem::EngineConfig::from_env().accel;
    config.sim_gflops = 2.0;  // a slow modelled device: 33 MFLOP per 256 x 256 product = 17 ms
    config.sim_bus_gbps = 0.25;
    tandem::configure_accelerators(config);
  }
  const tandem::Device device = use_cuda ? tandem::cuda(0) : tandem::sim(0);
  if (!tandem::device_available(device)) {
    std::printf("SKIPPED: %s is not available (device_count == %d)\n",
                tandem::to_string(device).c_str(), tandem::device_count(device.kind));
    return 0;
  }
  const std::int64_t n_cpu = quick ? 320 : 640;
  const std::int64_t n_accel = use_cuda ? 6000 : (quick ? 160 : 256);
  const nd::NDArray x_cpu = nd::random::uniform({n_cpu, n_cpu});
  const nd::NDArray x_accel = nd::random::uniform({n_accel, n_accel}, device);
  run(x_cpu);  // warm up
  run(x_accel);
  nd::waitall();
  std::printf("10 x dot(x, x): x_cpu %lldx%lld on %s\n", static_cast<long long>(n_cpu),
              static_cast<long long>(n_cpu), tandem::device_name(tandem::cpu()).c_str());
  std::printf("                x_accel %lldx%lld on %s\n\n", static_cast<long long>(n_accel),
              static_cast<long long>(n_accel), tandem::device_name(device).c_str());

  std::printf("8.3.1 CPU and accelerator in parallel\n");
  const double on_cpu = benchmark("Run on CPU.", [&] { run(x_cpu); });
  const double on_accel = benchmark("Then run on the accelerator.", [&] { run(x_accel); });
  const double both = benchmark("Run on both in parallel.", [&] {
    run(x_cpu);
    run(x_accel);
  });
  std::printf("  -> %.2f x the sum, %.2f x the longer\n\n", both / (on_cpu + on_accel),
              both / std::max(on_cpu, on_accel));

  std::printf("8.3.2 Computation and communication in parallel\n");
  std::vector<nd::NDArray> y;
  const double compute = benchmark("Run on the accelerator.", [&] { y = run(x_accel); });
  const double copy = benchmark("Then copy to CPU.", [&] { copy_to_cpu(y); });
  const double together =
      benchmark("Run and copy in parallel.", [&] { copy_to_cpu(run(x_accel)); });
  std::printf("  -> %.2f x run-then-copy\n", together / (compute + copy));
  return 0;
}
