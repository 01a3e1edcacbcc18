#include "dot_workloads.h"

#include <cblas.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace tandem::bench {

namespace {

namespace nd = tandem::nd;

template <class Body>
double time_of(Body&& body) {
  const auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void run_dot_workloads(bool quick, Records& records) {
  const std::int64_t n = 2000;
  const int rounds = quick ? 3 : 5;
  const nd::NDArray x = nd::random::uniform({n, n});
  nd::dot(x, x).wait_to_read();  // warm up (and tandem sets OpenBLAS to one thread)

  double independent = 1e30, dependent = 1e30;
  for (int round = 0; round < (quick ? 1 : 3); ++round) {
    independent = std::min(independent, time_of([&] {
                             std::vector<nd::NDArray> products;
                             for (int i = 0; i < 10; ++i) products.push_back(nd::dot(x, x));
                             nd::waitall();
                           }));
    dependent = std::min(dependent, time_of([&] {
                           nd::NDArray y = x;
                           for (int i = 0; i < 10; ++i) y = nd::dot(y, x);
                           nd::waitall();
                         }));
  }
  records.push_back({{"workload", "dot_10x_independent"},
                     {"system", "tandem"},
                     {"seconds", independent},
                     {"n", n}});
  records.push_back(
      {{"workload", "dot_10x_dependent"}, {"system", "tandem"}, {"seconds", dependent}, {"n", n}});
  std::printf("dot: 10 x dot(x, x) %lldx%lld: independent %.3f s, dependent chain %.3f s\n",
              static_cast<long long>(n), static_cast<long long>(n), independent, dependent);

  // The seeds' first example: queuing returns at once; waiting for the sum is what takes time.
  double queued = 0;
  nd::NDArray y;
  queued = time_of([&] {
    const nd::NDArray u = nd::random::uniform({n, n});
    y = nd::dot(u, u).sum();
  });
  const double finished = queued + time_of([&] { y.wait_to_read(); });
  records.push_back({{"workload", "dot_sum"},
                     {"system", "tandem"},
                     {"seconds", finished},
                     {"queued_seconds", queued},
                     {"n", n}});
  std::printf("dot(x, x).sum(): queued in %.6f s, finished after %.3f s\n", queued, finished);

  // tandem's dot (OpenBLAS on one thread per row block, blocks over the engine's workers)
  // against OpenBLAS with its default threads, interleaved round by round.
  const auto a = x.to_vector<float>();
  std::vector<float> c(a.size());
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double direct = 1e30, ours = 1e30;
  for (int round = 0; round < rounds; ++round) {
    openblas_set_num_threads(threads);
    direct = std::min(direct, time_of([&] {
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n),
                                    static_cast<int>(n), static_cast<int>(n), 1.0f, a.data(),
                                    static_cast<int>(n), a.data(), static_cast<int>(n), 0.0f,
                                    c.data(), static_cast<int>(n));
                      }));
    openblas_set_num_threads(1);  // what tandem runs with (see ops/cpu/gemm.h)
    ours = std::min(ours, time_of([&] { nd::dot(x, x).wait_to_read(); }));
  }
  records.push_back({{"workload", "dot_2000"}, {"system", "tandem"}, {"seconds", ours}});
  records.push_back({{"workload", "dot_2000"},
                     {"system", "openblas"},
                     {"seconds", direct},
                     {"threads", threads}});
  std::printf("dot 2000x2000: tandem %.4f s, OpenBLAS direct (%d threads) %.4f s, ratio %.2f\n",
              ours, threads, direct, ours / direct);
  records.push_back(target_record("dot 2000x2000: tandem time / OpenBLAS direct", "<= 1.2",
                                  ours / direct, 1.2, true));
}

}  // namespace tandem::bench
