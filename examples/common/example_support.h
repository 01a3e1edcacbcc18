// What the seeds' example programs share: their timing helper, their `run(x)` workload and
// command-line flags. Header-only; examples link `tandem_example_support`.
#pragma once

#include <tandem/tandem.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace tandem_example {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The seeds' Benchmark: runs `body`, waits for everything it queued (nd::waitall), and prints
// "<label, padded to label_width> time: X sec". Returns the seconds.
template <class Body>
double benchmark(const char* label, int label_width, Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  tandem::nd::waitall();
  const double seconds = seconds_since(start);
  std::printf("%-*s time: %.4f sec\n", label_width, label, seconds);
  return seconds;
}

// The seeds' run(x): queues 10 independent products dot(x, x).
inline std::vector<tandem::nd::NDArray> run(const tandem::nd::NDArray& x) {
  std::vector<tandem::nd::NDArray> products;
  for (int i = 0; i < 10; ++i) products.push_back(tandem::nd::dot(x, x));
  return products;
}

// True when `flag` (e.g. "--quick") is among the arguments.
inline bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return true;
  }
  return false;
}

}  // namespace tandem_example
