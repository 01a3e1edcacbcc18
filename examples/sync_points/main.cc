// sync_points: the seeds' "synchronization functions" (d2l 8.2.2) written with tandem.
//
//   build/examples/sync_points/sync_points [--quick]
//
// Every NDArray call returns at once; these are the calls that make the front end wait:
//   y.wait_to_read()    until y is computed (the ops that write y, and what they depend on)
//   nd::waitall()       until every queued op has finished
//   y.to_vector<T>()    copies the values out (MXNet's asnumpy), so it waits for y first
//   y.scalar<T>()       the one value of a one-element array (MXNet's asscalar)
//   std::cout << y      printing needs the values too
// Each of them also rethrows the error of a failed op that produced the array.
#include <tandem/tandem.h>

#include "example_support.h"

#include <chrono>
#include <cstdio>
#include <iostream>

namespace nd = tandem::nd;

namespace {

template <class Body>
void benchmark(const char* prefix, Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  const double elapsed = tandem_example::seconds_since(start);
  std::printf("%stime: %.4f sec\n", prefix, elapsed);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = tandem_example::has_flag(argc, argv, "--quick");
  const std::int64_t n = quick ? 500 : 2000;
  nd::NDArray x, y, z;

  std::printf("wait_to_read: the block ends when y is ready\n");
  benchmark("", [&] {
    x = nd::random::uniform({n, n});
    y = nd::dot(x, x).sum();
    y.wait_to_read();
  });
  benchmark("Workloads are finished. ", [&] { std::cout << "sum = " << y << "\n"; });

  std::printf("\nwaitall: both products, queued together, finish before it returns\n");
  benchmark("", [&] {
    y = nd::dot(x, x);
    z = nd::dot(x, x);
    nd::waitall();
  });

  std::printf("\nto_vector (asnumpy) and scalar (asscalar) wait for their array\n");
  benchmark("to_vector: ", [&] {
    y = nd::dot(x, x);
    const auto values = y.to_vector<float>();
    std::printf("  %zu values, y[0][0] = %.3f\n", values.size(), values[0]);
  });
  benchmark("scalar:    ", [&] {
    y = nd::dot(x, x);
    std::printf("  norm = %.1f\n", y.norm().scalar<double>());
  });

  std::printf("\nan op's error surfaces at the sync point of its result\n");
  const nd::NDArray divisor = nd::from_vector(std::vector<std::int32_t>{1, 0, 2});
  const nd::NDArray quotient = nd::full({3}, 6, nd::int32) / divisor;  // queued: no error yet
  try {
    quotient.wait_to_read();
  } catch (const tandem::Error& e) {
    std::printf("  wait_to_read threw: %s\n", e.what());
  }
  try {
    nd::waitall();  // each error is reported once; this one was already seen
  } catch (const tandem::Error& e) {
    std::printf("  waitall threw: %s\n", e.what());
  }
  return 0;
}
