// allreduce_cost: what a tandem::dist allreduce costs against a plain MPI_Allreduce of the same
// bytes, on the ranks of mpirun (bench/run.sh distributed runs it):
//
//   mpirun --oversubscribe -np 2 build/examples/train_distributed/allreduce_cost [--quick]
//
// For each size: `iterations` round trips of group.allreduce(x) + x.wait_to_read() (one engine
// op, the header exchange, MPI_Iallreduce polled by the comm thread, the completion), then as
// many blocking MPI_Allreduce calls on a buffer of the same size from the main thread,
// alternating the two five times; the medians per call are printed (rank 0) as one JSON object
// per line: {"bytes", "ranks", "tandem_us", "mpi_us", "ratio"}.
#include <mpi.h>
#include <tandem/dist/process_group.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace nd = tandem::nd;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  tandem::dist::ProcessGroup group;
  const std::vector<std::int64_t> sizes = {1 << 10, 1 << 14, 1 << 18, 1 << 20};  // floats
  for (const std::int64_t count : sizes) {
    const int iterations = quick ? 10 : (count >= (1 << 18) ? 20 : 200);
    nd::NDArray x = nd::ones({count});
    std::vector<float> buffer(static_cast<std::size_t>(count), 1.0f);
    std::vector<double> tandem_us, mpi_us;
    for (int round = 0; round < 5; ++round) {
      group.barrier();
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) {
        group.allreduce(x);
        x.wait_to_read();
      }
      tandem_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count() /
          iterations);
      group.barrier();
      start = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) {
        MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      }
      mpi_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count() /
          iterations);
    }
    if (group.rank() == 0) {
      const double t = median(tandem_us), m = median(mpi_us);
      std::printf(
          "{\"bytes\": %lld, \"ranks\": %d, \"tandem_us\": %.1f, \"mpi_us\": %.1f, \"ratio\": "
          "%.2f}\n",
          static_cast<long long>(count * 4), group.size(), t, m, t / m);
      std::fflush(stdout);
    }
  }
  tandem::wait_all();
  return 0;
}
