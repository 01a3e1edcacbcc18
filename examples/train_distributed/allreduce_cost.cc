// allreduce_cost: what a tandem::dist allreduce costs against a plain MPI_Allreduce of the same
// bytes, on the ranks of mpirun (bench/run.sh distributed runs it):
//
//   mpirun --oversubscribe -np 2 build/examples/train_distributed/allreduce_cost [--quick]
//
// For each size: `iterations` round trips of group.allreduce(x) + x.wait_to_read() (one engine
// op, the header check sent beside MPI_Iallreduce, both polled by the comm thread, the completion),
// then as many blocking MPI_Allreduce calls on a buffer of the same size from the main thread,
// alternating the two five times; the medians per call are printed (rank 0) as one JSON object
// per line: {"bytes", "ranks", "tandem_us", "mpi_us", "ratio"}.
//
//   mpirun -np 2 allreduce_cost --model lenet_bn [--batch-size 32] [--quick]
//
// The exchange of one training step of that model instead: two steps of the Trainer
// (during_backward, cross_process) make the bucket plan; then each round queues one
// group.allreduce per bucket, on flat arrays of the buckets' sizes, and waits for them (the
// exchange a step queues, without the packs' copies), against one blocking MPI_Allreduce of all
// the step's gradient bytes, and against one blocking MPI_Allreduce per bucket. Printed (rank 0):
// {"model", "bytes", "buckets", "ranks", "tandem_us", "mpi_us", "mpi_buckets_us", "ratio"},
// ratio = tandem_us / mpi_us.
//
//   mpirun -np 2 allreduce_cost --metg [--quick]
//
// Task Bench's METG across the ranks: a chain of `steps` tasks per rank, each a busy wait of g
// (on the steady clock) on a cpu worker, each followed by a group.allreduce of the task's
// one-element output that the rank's next task reads (so every step depends on every rank's
// previous task, a stencil as wide as the ranks). Efficiency = steps * g / wall per rank (one
// worker each); METG(50%) = the smallest g swept with efficiency >= 0.5. Printed (rank 0) per
// g: {"metg_grain_us", "ranks", "efficiency"}, then {"metg_50_us", "ranks"}.
#include <mpi.h>
#include <tandem/dist/process_group.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models.h"

namespace nd = tandem::nd;
namespace nn = tandem::nn;
namespace autograd = tandem::autograd;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double microseconds_since(std::chrono::steady_clock::time_point start, int iterations) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
             .count() /
         iterations;
}

// The exchange of one step of `model_name` (see the top of the file).
int model_exchange(tandem::dist::ProcessGroup& group, const std::string& model_name,
                   std::int64_t batch_size, bool quick) {
  auto shared = std::shared_ptr<nn::CrossProcessReducer>(&group, [](nn::CrossProcessReducer*) {});
  const tandem::data::DigitsDataSet digits = tandem::data::load_digits(TANDEM_DIGITS_DIR);
  auto net = tandem::examples::require_model(model_name);
  net->initialize(nn::Xavier());
  const nd::NDArray images = digits.train.images.slice(0, batch_size);
  const nd::NDArray labels = digits.train.labels.slice(0, batch_size);
  (*net)(images);
  nn::Trainer trainer(
      net->collect_params(), nn::SGD(0.01),
      {.exchange = nn::GradientExchangeMode::during_backward, .cross_process = shared});
  for (int step = 0; step < 2; ++step) {
    nd::NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::softmax_cross_entropy((*net)(images), labels).sum();
    }
    loss.backward();
    trainer.step(batch_size);
  }
  tandem::wait_all();
  std::map<std::string, std::int64_t> elements;
  for (const auto& entry : net->collect_params())
    elements[entry.second->name()] = entry.second->shape().num_elements();
  std::vector<nd::NDArray> flats;
  std::vector<std::int64_t> counts;
  std::int64_t total = 0;
  for (const std::vector<std::string>& bucket : trainer.exchange()->cross_process_bucket_plan()) {
    std::int64_t count = 0;
    for (const std::string& name : bucket) count += elements.at(name);
    flats.push_back(nd::ones({count}));
    counts.push_back(count);
    total += count;
  }
  std::vector<float> buffer(static_cast<std::size_t>(total), 1.0f);
  const int iterations = quick ? 20 : 200;
  std::vector<double> tandem_us, mpi_us, mpi_buckets_us;
  for (int round = 0; round < 5; ++round) {
    group.barrier();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      for (nd::NDArray& flat : flats) group.allreduce(flat);
      tandem::wait_all();
    }
    tandem_us.push_back(microseconds_since(start, iterations));
    group.barrier();
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    }
    mpi_us.push_back(microseconds_since(start, iterations));
    group.barrier();
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      float* at = buffer.data();
      for (const std::int64_t count : counts) {
        MPI_Allreduce(MPI_IN_PLACE, at, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
        at += count;
      }
    }
    mpi_buckets_us.push_back(microseconds_since(start, iterations));
  }
  if (group.rank() == 0) {
    const double t = median(tandem_us), m = median(mpi_us), b = median(mpi_buckets_us);
    std::printf(
        "{\"model\": \"%s\", \"bytes\": %lld, \"buckets\": %zu, \"ranks\": %d, "
        "\"tandem_us\": %.1f, \"mpi_us\": %.1f, \"mpi_buckets_us\": %.1f, \"ratio\": %.2f}\n",
        model_name.c_str(), static_cast<long long>(total * 4), counts.size(), group.size(), t, m, b,
        t / m);
    std::fflush(stdout);
  }
  tandem::wait_all();
  return 0;
}

// Task Bench's METG pattern across the ranks (see the top of the file).
int metg(tandem::dist::ProcessGroup& group, bool quick) {
  const int steps = quick ? 20 : 100;
  const std::vector<double> grains_us = {10, 20, 50, 100, 200, 500, 1000, 2000, 5000};
  double metg_us = -1;
  for (const double grain_us : grains_us) {
    nd::NDArray x = nd::zeros({1});
    tandem::Engine& engine = x.engine();
    group.barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int step = 0; step < steps; ++step) {
      const auto grain = std::chrono::duration<double, std::micro>(grain_us);
      std::vector<tandem::Var> writes{x.var()};
      engine.push(
          [grain] {
            const auto until = std::chrono::steady_clock::now() + grain;
            while (std::chrono::steady_clock::now() < until) {
            }
          },
          tandem::cpu(), {}, tandem::VarList(writes), {.name = "metg_task"});
      group.allreduce(x);
    }
    x.wait_to_read();
    const double wall_us = microseconds_since(start, 1);
    nd::NDArray efficiency = nd::full({1}, steps * grain_us / wall_us, nd::float64);
    group.allreduce(efficiency, tandem::dist::ReduceOp::mean);
    const double mean = efficiency.to_vector<double>()[0];
    if (metg_us < 0 && mean >= 0.5) metg_us = grain_us;
    if (group.rank() == 0) {
      std::printf("{\"metg_grain_us\": %.0f, \"ranks\": %d, \"efficiency\": %.3f}\n", grain_us,
                  group.size(), mean);
      std::fflush(stdout);
    }
  }
  if (group.rank() == 0) {
    std::printf("{\"metg_50_us\": %.0f, \"ranks\": %d}\n", metg_us, group.size());
    std::fflush(stdout);
  }
  tandem::wait_all();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  bool run_metg = false;
  std::string model;
  std::int64_t batch_size = 32;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--quick") {
      quick = true;
    } else if (flag == "--metg") {
      run_metg = true;
    } else if (flag == "--model" && i + 1 < argc) {
      model = argv[++i];
    } else if (flag == "--batch-size" && i + 1 < argc) {
      batch_size = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: allreduce_cost [--quick] [--model NAME [--batch-size B] | --metg]\n");
      return 2;
    }
  }
  tandem::dist::ProcessGroup group;
  if (!model.empty()) return model_exchange(group, model, batch_size, quick);
  if (run_metg) return metg(group, quick);
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
