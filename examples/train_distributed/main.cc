// train_distributed: data-parallel training of a digits model across the processes of mpirun,
// one process per rank (PyTorch DDP's recipe on tandem::dist):
//
//   mpirun --oversubscribe -np 2 build/examples/train_distributed/train_distributed
//       [--model lenet_bn] [--dataset digits|fashion_mnist] [--epochs N] [--steps N]
//       [--batch-size B] [--lr X] [--data DIR] [--quick]
//       [--profile] [--trace PREFIX] [--bucket-bytes N]
//
// (As root, Open MPI wants OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.)
// Each rank:
// - builds the same model and runs one forward to fix its deferred shapes; the Trainer then
//   broadcasts rank 0's weights, so every rank starts alike whatever its own initialization;
// - reads its own shard of the training set (DataLoaderOptions::num_shards / shard: disjoint,
//   reshuffled every epoch with the shared seed), batch B per rank, so a step sees N * B
//   samples;
// - runs forward and backward; the Trainer's during_backward exchange queues each gradient's
//   sum across the ranks as soon as backward has produced it, so the exchange of the last
//   layers overlaps the backward of the first ones; step(B) divides by N * B.
// At the end of each epoch the ranks sum their loss and accuracy counts (one allreduce), and
// rank 0 prints them with the epoch's time and throughput over all ranks. BatchNorm's running
// statistics stay per rank (DDP broadcasts them from rank 0 each forward; here the test accuracy
// is rank 0's, on at most 2000 test images).
// --profile records the last epoch with the profiler and prints (rank 0) the fraction of the
// exchange across the ranks that ran while the rank computed its backward
// (cross_process_overlap.h), summed over the ranks; --trace PREFIX also writes each rank's trace to
// PREFIX.rankR.json.
#include <tandem/dist/process_group.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cross_process_overlap.h"
#include "models.h"

namespace nd = tandem::nd;
namespace nn = tandem::nn;
namespace data = tandem::data;
namespace autograd = tandem::autograd;

namespace {

struct Flags {
  std::string model = "lenet_bn";
  int epochs = 5;
  std::int64_t batch_size = 32;  // per rank
  double learning_rate = 0.1;
  std::string dataset = "digits";  // or fashion_mnist
  std::string data_dir;            // default: the data set's own
  int steps = 0;                   // per epoch and rank; 0: the whole shard
  bool quick = false;
  bool profile = false;
  // GradientExchangeOptions::cross_process_bucket_bytes (-1: its default).
  long long bucket_bytes = -1;
  std::string trace;  // prefix of each rank's trace file (implies profile)
};

bool parse(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--quick") {
      flags.quick = true;
      flags.epochs = 1;
      flags.steps = 10;
    } else if (flag == "--dataset" && has_value) {
      flags.dataset = argv[++i];
    } else if (flag == "--steps" && has_value) {
      flags.steps = std::atoi(argv[++i]);
    } else if (flag == "--model" && has_value) {
      flags.model = argv[++i];
    } else if (flag == "--epochs" && has_value) {
      flags.epochs = std::atoi(argv[++i]);
    } else if (flag == "--batch-size" && has_value) {
      flags.batch_size = std::atoll(argv[++i]);
    } else if (flag == "--lr" && has_value) {
      flags.learning_rate = std::atof(argv[++i]);
    } else if (flag == "--data" && has_value) {
      flags.data_dir = argv[++i];
    } else if (flag == "--bucket-bytes" && has_value) {
      flags.bucket_bytes = std::atoll(argv[++i]);
    } else if (flag == "--profile") {
      flags.profile = true;
    } else if (flag == "--trace" && has_value) {
      flags.trace = argv[++i];
      flags.profile = true;
    } else {
      return false;
    }
  }
  if (flags.data_dir.empty())
    flags.data_dir = flags.dataset == "digits" ? TANDEM_DIGITS_DIR : data::kFashionMnistDirectory;
  return flags.epochs > 0 && flags.batch_size > 0 && flags.steps >= 0 &&
         (flags.dataset == "digits" || flags.dataset == "fashion_mnist");
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!parse(argc, argv, flags)) {
    std::fprintf(stderr,
                 "usage: mpirun -np N train_distributed [--model %s]\n"
                 "           [--dataset digits|fashion_mnist] [--epochs N] [--steps N]\n"
                 "           [--batch-size B] [--lr X] [--data DIR] [--quick] [--profile]\n"
                 "           [--trace PREFIX] [--bucket-bytes N]\n",
                 tandem::examples::model_names().c_str());
    return 2;
  }
  auto group = std::make_shared<tandem::dist::ProcessGroup>();
  const bool lead = group->rank() == 0;
  // Both data sets as {train, test}: images N x 1 x H x W, labels N.
  const auto [train, test] = [&] {
    if (flags.dataset == "digits") {
      data::DigitsDataSet digits = data::load_digits(flags.data_dir);
      return std::pair{digits.train, digits.test};
    }
    data::MnistDataSet fashion = data::load_fashion_mnist(flags.data_dir);
    return std::pair{fashion.train, fashion.test};
  }();
  auto net = tandem::examples::make_model(flags.model);
  if (net == nullptr) {
    std::fprintf(stderr, "no model called '%s'\n", flags.model.c_str());
    return 2;
  }
  nd::random::seed(1 + static_cast<std::uint64_t>(group->rank()));  // differs: rank 0's wins
  net->initialize(nn::Xavier());
  (*net)(test.images.slice(0, 1));  // fixes the deferred shapes
  nn::GradientExchangeOptions exchange;
  if (flags.bucket_bytes >= 0)
    exchange.cross_process_bucket_bytes = static_cast<std::size_t>(flags.bucket_bytes);
  nn::Trainer trainer(net->collect_params(), nn::SGD(flags.learning_rate, 0.9, 5e-4),
                      {.exchange = nn::GradientExchangeMode::during_backward,
                       .exchange_options = exchange,
                       .cross_process = group});
  data::DataLoader loader(train.images, train.labels,
                          {.batch_size = flags.batch_size,
                           .shuffle = true,
                           .seed = 1,
                           .last_batch = data::LastBatch::discard,
                           .num_shards = group->size(),
                           .shard = group->rank()});
  if (lead) {
    std::printf("train_distributed: %s on %s, %d rank(s), batch %lld per rank (%lld per step)\n",
                flags.model.c_str(), flags.dataset.c_str(), group->size(),
                static_cast<long long>(flags.batch_size),
                static_cast<long long>(flags.batch_size * group->size()));
  }
  tandem::examples::BackwardWindows windows;
  for (int epoch = 1; epoch <= flags.epochs; ++epoch) {
    const bool profiled = flags.profile && epoch == flags.epochs;
    if (profiled) {
      tandem::wait_all();
      tandem::profiler::start();
      windows.start();
    }
    const auto start = std::chrono::steady_clock::now();
    nd::NDArray totals = nd::zeros({3}, nd::float64);  // loss, correct, samples
    int steps = 0;
    for (const data::Batch& batch : loader) {
      const std::int64_t rows = batch.data.shape()[0];
      nd::NDArray logits, loss;
      {
        auto recording = autograd::record();
        logits = (*net)(batch.data);
        loss = nd::softmax_cross_entropy(logits, batch.label).sum();
      }
      if (profiled) windows.begin();
      loss.backward();
      if (profiled) windows.end();
      trainer.step(rows);
      const nd::NDArray correct = nd::accuracy(logits, batch.label) * static_cast<double>(rows);
      totals = totals + nd::concat({loss.astype(nd::float64).reshape({1}),
                                    correct.astype(nd::float64).reshape({1}),
                                    nd::full({1}, static_cast<double>(rows), nd::float64)});
      if (flags.steps > 0 && ++steps == flags.steps) break;
    }
    group->allreduce(totals);
    const std::vector<double> sums = totals.to_vector<double>();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (profiled) {
      tandem::profiler::stop();
      if (!flags.trace.empty())
        tandem::profiler::dump(flags.trace + ".rank" + std::to_string(group->rank()) + ".json");
      const tandem::examples::ExchangeOverlap mine =
          tandem::examples::cross_process_overlap(tandem::profiler::events(), windows);
      nd::NDArray overlap =
          nd::from_vector(std::vector<double>{mine.exchange_ms, mine.hidden_ms}, nd::Shape{2});
      group->allreduce(overlap);
      const std::vector<double> all = overlap.to_vector<double>();
      if (lead) {
        std::printf("exchange: hidden %.3f (%.2f of %.2f ms, summed over %d ranks), %zu buckets\n",
                    all[0] > 0 ? all[1] / all[0] : 0.0, all[1], all[0], group->size(),
                    trainer.exchange()->cross_process_buckets());
      }
    }
    if (lead) {
      const std::int64_t shown = std::min<std::int64_t>(test.images.shape()[0], 2000);
      const double test_accuracy =
          nd::accuracy((*net)(test.images.slice(0, shown)), test.labels.slice(0, shown))
              .scalar<double>();
      std::printf(
          "epoch %d: loss %.4f, train acc %.4f, test acc %.4f (rank 0), %.2f s, "
          "%.0f samples/s\n",
          epoch, sums[0] / sums[2], sums[1] / sums[2], test_accuracy, seconds, sums[2] / seconds);
    }
  }
  tandem::wait_all();
  return 0;
}
