// auto_parallel: the CPU part of the seeds' "automatic parallelism" (d2l 8.3.1) with tandem.
//
//   build/examples/auto_parallel/auto_parallel [--quick]
//
// run(x) queues 10 products dot(x, x). The engine sees from their vars that they are
// independent, so two of them may run side by side on two workers; each one also splits itself
// into row blocks over the same worker pool (intra-op parallelism). As the seeds note, when one
// op can already use every core, running independent ops together gains little on a CPU; the
// contrast is a dependent chain, which must run one product at a time, and waiting after every
// product, which also keeps the next one from being queued early.
#include <tandem/tandem.h>

#include "example_support.h"

#include <utility>

namespace nd = tandem::nd;

using tandem_example::run;

// The seeds' Benchmark, with their label width.
template <class Body>
double benchmark(const char* label, Body&& body) {
  return tandem_example::benchmark(label, 44, std::forward<Body>(body));
}

int main(int argc, char** argv) {
  const bool quick = tandem_example::has_flag(argc, argv, "--quick");
  const std::int64_t n = quick ? 500 : 2000;
  const nd::NDArray x = nd::random::uniform({n, n});
  run(x);  // warm up
  nd::waitall();
  std::printf("10 x dot(x, x), x %lldx%lld float32, %s\n\n", static_cast<long long>(n),
              static_cast<long long>(n), tandem::device_name(tandem::cpu()).c_str());
  benchmark("Independent, all queued, one waitall.", [&] { run(x); });
  benchmark("Independent, waiting after each.", [&] {
    for (int i = 0; i < 10; ++i) nd::dot(x, x).wait_to_read();
  });
  benchmark("Dependent chain (y = dot(y, x) / n).", [&] {
    nd::NDArray y = x;
    for (int i = 0; i < 10; ++i) y = nd::dot(y, x) / static_cast<double>(n);
  });
  benchmark("Two workloads side by side (dots + exp).", [&] {
    auto products = run(x);
    std::vector<nd::NDArray> others;
    for (int i = 0; i < 10; ++i) others.push_back(nd::exp(x * -1.0).sum());
  });
  return 0;
}
