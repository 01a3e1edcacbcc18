// multi_device_concise: the seeds' "concise multi-GPU training" (seed 003, section 8.5; seed
// 004) in C++: d2l's ResNet-18 on Fashion-MNIST, initialize(Normal(0.01)) on every device,
// Trainer with SGD, softmax cross entropy, each batch split across the devices.
//
//   build/examples/multi_device_concise/multi_device_concise [--devices LIST] [--epochs N]
//       [--batch-size N] [--lr X] [--limit N] [--data DIR]
//
//   --devices cpu | sim(0),sim(1) | gpu(0),gpu(1)   (default cpu; sim needs TANDEM_SIM_DEVICES)
//   --limit N     train on the first N training images and test on the first N test images
//   --data DIR    the four Fashion-MNIST IDX files (train-images-idx3-ubyte, ...), plain or
//                 .gz (default: Debian's dataset-fashion-mnist folder)
//
// Prints the seeds' lines, "epoch N, time T sec, test acc A": T is the training time of the
// epoch (everything queued, then nd::waitall), A the accuracy on the test images (evaluated
// on the first device, in prediction mode). The seed's figures: 1 GPU, batch 256, lr 0.1:
// 13.0 sec per epoch, test acc 0.92 after 4 epochs; 2 GPUs, batch 512, lr 0.2: 6.7 sec.
// Without the data files it prints where it looked and exits 0.
#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

namespace nd = tandem::nd;
namespace nn = tandem::nn;

struct Flags {
  std::vector<tandem::Device> devices{tandem::cpu()};
  int epochs = 4;
  std::int64_t batch_size = 256;
  double lr = 0.1;
  std::int64_t limit = 0;  // 0: every image
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
};

int usage() {
  std::fprintf(stderr,
               "usage: multi_device_concise [--devices cpu|sim(0),sim(1)|gpu(0),...] "
               "[--epochs N]\n"
               "                            [--batch-size N] [--lr X] [--limit N] [--data DIR]\n");
  return 2;
}

std::vector<tandem::Device> parse_devices(const std::string& list) {
  std::vector<tandem::Device> devices;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t comma = list.find(',', begin);
    const std::size_t end = comma == std::string::npos ? list.size() : comma;
    devices.push_back(tandem::parse_device(list.substr(begin, end - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return devices;
}

struct Split {
  nd::NDArray images;  // (N, 1, 28, 28) float32 in [0, 1]
  nd::NDArray labels;  // (N) int32
};

// The first `limit` samples of `data` (all of them when limit <= 0).
Split first(const tandem::data::LabeledData& data, std::int64_t limit) {
  std::int64_t n = data.images.shape()[0];
  if (limit > 0 && limit < n) n = limit;
  return {data.images.slice(0, n), data.labels.slice(0, n).copy()};
}

double evaluate_accuracy(nn::Block& net, const Split& test, tandem::Device device,
                         std::int64_t batch_size) {
  auto predicting = tandem::autograd::predict_mode();
  nn::Accuracy accuracy;
  for (std::int64_t begin = 0; begin < test.images.shape()[0]; begin += batch_size) {
    const std::int64_t end = std::min(begin + batch_size, test.images.shape()[0]);
    const nd::NDArray x = test.images.slice(begin, end).copyto(device);
    accuracy.update(test.labels.slice(begin, end).copyto(device), net(x));
  }
  return accuracy.get();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string flag = argv[i];
      if (i + 1 >= argc) return usage();
      const std::string value = argv[++i];
      if (flag == "--devices") {
        flags.devices = parse_devices(value);
      } else if (flag == "--epochs") {
        flags.epochs = std::atoi(value.c_str());
      } else if (flag == "--batch-size") {
        flags.batch_size = std::atoll(value.c_str());
      } else if (flag == "--lr") {
        flags.lr = std::atof(value.c_str());
      } else if (flag == "--limit") {
        flags.limit = std::atoll(value.c_str());
      } else if (flag == "--data") {
        flags.data_dir = value;
      } else {
        return usage();
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multi_device_concise: %s\n", e.what());
    return usage();
  }
  if (flags.epochs < 1 || flags.batch_size < 1 || flags.limit < 0 || !(flags.lr > 0)) {
    return usage();
  }
  for (const tandem::Device device : flags.devices) {
    if (device.id >= tandem::device_count(device.kind)) {
      std::printf("multi_device_concise: skipped: %s is not present%s\n",
                  tandem::to_string(device).c_str(),
                  device.kind == tandem::DeviceKind::sim ? " (set TANDEM_SIM_DEVICES)" : "");
      return 0;
    }
  }
  if (!tandem::data::mnist_available(flags.data_dir)) {
    std::printf(
        "multi_device_concise: skipped: no Fashion-MNIST IDX files in %s "
        "(apt-get install dataset-fashion-mnist, or pass --data DIR)\n",
        flags.data_dir.c_str());
    return 0;
  }
  try {
    // The IDX files, plain or gzipped (Debian's package ships them gzipped).
    const tandem::data::MnistDataSet data = tandem::data::load_fashion_mnist(flags.data_dir);
    const Split train = first(data.train, flags.limit);
    const Split test = first(data.test, flags.limit);
    tandem::data::DataLoader loader(train.images, train.labels,
                                    {.batch_size = flags.batch_size, .shuffle = true, .seed = 1});

    auto net = nn::models::resnet18(10);
    net->initialize(nn::Normal(0.01), flags.devices);
    nn::Trainer trainer(net->collect_params(), nn::SGD(flags.lr));
    std::printf("running on:");
    for (const tandem::Device device : flags.devices) {
      std::printf(" %s", tandem::to_string(device).c_str());
    }
    std::printf("; %lld training images, batch %lld, lr %g\n",
                static_cast<long long>(train.images.shape()[0]),
                static_cast<long long>(flags.batch_size), flags.lr);
    for (int epoch = 1; epoch <= flags.epochs; ++epoch) {
      const auto start = std::chrono::steady_clock::now();
      for (const tandem::data::Batch& batch : loader) {
        if (batch.data.shape()[0] < static_cast<std::int64_t>(flags.devices.size())) continue;
        const std::vector<nd::NDArray> xs =
            nd::split_and_load(batch.data, flags.devices, /*even_split=*/false);
        const std::vector<nd::NDArray> ys =
            nd::split_and_load(batch.label, flags.devices, /*even_split=*/false);
        std::vector<nd::NDArray> losses;
        {
          auto recording = tandem::autograd::record();
          for (std::size_t d = 0; d < xs.size(); ++d) {
            losses.push_back(nn::softmax_ce_loss((*net)(xs[d]), ys[d]).sum());
          }
        }
        for (const nd::NDArray& loss : losses) loss.backward();
        trainer.step(batch.data.shape()[0]);
      }
      nd::waitall();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double test_acc =
          evaluate_accuracy(*net, test, flags.devices.front(), flags.batch_size);
      std::printf("epoch %d, time %.1f sec, test acc %.2f\n", epoch, seconds, test_acc);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multi_device_concise: %s\n", e.what());
    return 1;
  }
  return 0;
}
