// multi_device_scratch: seed 003's section 8.4 ("multi-GPU computation") in C++. Its LeNet is
// written out with plain arrays (parameters that attach_grad, conv2d/avg_pool2d/dot by hand),
// each device gets a copy of the parameters, every batch is split over the devices with
// split_and_load, each device runs forward and backward on its part, a hand-written allreduce
// sums the gradients onto every device, and a hand-written sgd updates each copy. Trained on
// Fashion-MNIST, it prints the seed's lines:
//
//   running on: [sim(0), sim(1)]
//   epoch 1, time 9.6 sec, test acc 0.10
//
//   build/examples/multi_device_scratch/multi_device_scratch [--devices LIST] [--epochs N]
//       [--batch-size N] [--lr X] [--limit N] [--data DIR] [--seed N] [--sync-each-batch]
//
// --devices: a comma-separated list, e.g. cpu, sim0,sim1, cuda0,cuda1 (default cpu).
// --limit N: train on the first N training images and test on the first N test images.
// --data: the four IDX files, gzipped or not (default /usr/share/datasets/fashion-mnist, from
//   Debian's dataset-fashion-mnist; the example says so and exits 0 when they are missing).
// --sync-each-batch: nd::waitall() after every batch, as the seed's loop does; by default the
//   loop runs ahead of the devices (the engine bounds how far) and waits once per epoch.
//
// The seed's defaults: batch 256, lr 0.2, 4 epochs, parameters drawn from N(0, 0.01^2).
// The network is the one in the seed's code for 8.4 (relu activations, average pooling, 3x3
// and 5x5 convolutions of 20 and 50 channels, a dense layer of 128), the one its printed
// accuracies come from; d2l's classic sigmoid LeNet (5x5 convolutions of 6 and 16 channels) is
// a different network.
#include <tandem/tandem.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "example_support.h"

namespace {

namespace nd = tandem::nd;
using nd::NDArray;
using Params = std::vector<NDArray>;

struct Flags {
  std::vector<tandem::Device> devices{tandem::cpu()};
  int epochs = 4;
  std::int64_t batch_size = 256;
  double lr = 0.2;
  std::int64_t limit = 0;  // 0: every image
  std::string data = tandem::data::kFashionMnistDirectory;
  std::uint64_t seed = 0;
  bool sync_each_batch = false;
};

int usage() {
  std::fprintf(stderr,
               "usage: multi_device_scratch [--devices cpu|sim0,sim1|cuda0,...] [--epochs N]\n"
               "                            [--batch-size N] [--lr X] [--limit N] [--data DIR]\n"
               "                            [--seed N] [--sync-each-batch]\n");
  return 2;
}

// "cpu", "sim0", "cuda1", ... as a device; false when the name is none of these.
bool parse_device(const std::string& name, tandem::Device* device) {
  if (name == "cpu") {
    *device = tandem::cpu();
    return true;
  }
  for (const auto& [prefix, kind] :
       {std::pair<std::string, tandem::DeviceKind>{"sim", tandem::DeviceKind::sim},
        {"cuda", tandem::DeviceKind::cuda}}) {
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) {
      const std::string digits = name.substr(prefix.size());
      if (digits.find_first_not_of("0123456789") != std::string::npos) return false;
      *device = tandem::Device{kind, std::atoi(digits.c_str())};
      return true;
    }
  }
  return false;
}

bool parse_devices(const std::string& list, std::vector<tandem::Device>* devices) {
  devices->clear();
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    tandem::Device device;
    if (!parse_device(list.substr(start, comma - start), &device)) return false;
    devices->push_back(device);
    start = comma + 1;
  }
  return !devices->empty();
}

// The seed's parameters: W1 20x1x3x3, b1 20, W2 50x20x5x5, b2 50, W3 800x128, b3 128, W4 128x10,
// b4 10; weights from N(0, 0.01^2), biases zero.
Params init_params() {
  const double scale = 0.01;
  return {nd::random::normal({20, 1, 3, 3}, {.stddev = scale}),  nd::zeros({20}),
          nd::random::normal({50, 20, 5, 5}, {.stddev = scale}), nd::zeros({50}),
          nd::random::normal({800, 128}, {.stddev = scale}),     nd::zeros({128}),
          nd::random::normal({128, 10}, {.stddev = scale}),      nd::zeros({10})};
}

// The seed's lenet(X, params): conv 3x3 (20) - relu - avg pool 2 - conv 5x5 (50) - relu -
// avg pool 2 - flatten - dense 128 - relu - dense 10.
NDArray lenet(const NDArray& x, const Params& params) {
  const nd::Pool2dOptions pool{.kernel = nd::Size2d{2}, .stride = nd::Size2d{2}};
  NDArray h1 = nd::avg_pool2d(nd::relu(nd::conv2d(x, params[0], params[1])), pool);
  NDArray h2 = nd::avg_pool2d(nd::relu(nd::conv2d(h1, params[2], params[3])), pool);
  NDArray h3 = nd::relu(nd::dot(nd::flatten(h2), params[4]) + params[5]);
  return nd::dot(h3, params[6]) + params[7];
}

// The seed's get_params: a copy of every parameter on `device`, with a gradient.
Params get_params(const Params& params, tandem::Device device) {
  Params copies;
  for (const NDArray& p : params) {
    copies.push_back(p.copyto(device));
    copies.back().attach_grad();
  }
  return copies;
}

// The seed's allreduce: the sum onto data[0]'s device, then copied back to every other one.
void allreduce(std::vector<NDArray>& data) {
  for (std::size_t i = 1; i < data.size(); ++i) data[0] += data[i].copyto(data[0].device());
  for (std::size_t i = 1; i < data.size(); ++i) data[0].copyto(data[i]);
}

// The seed's d2l.sgd: param -= lr * grad / batch_size.
void sgd(Params& params, double lr, std::int64_t batch_size) {
  for (NDArray& p : params) p -= p.grad() * (lr / static_cast<double>(batch_size));
}

// The seed's train_batch.
void train_batch(const NDArray& x, const NDArray& y, std::vector<Params>& device_params,
                 const std::vector<tandem::Device>& devices, double lr) {
  // Unlike the seed's, this split_and_load takes a batch that does not divide evenly (the
  // last batch of an epoch, or a --limit): the first parts get one row more.
  const std::vector<NDArray> xs = nd::split_and_load(x, devices, /*even_split=*/false);
  const std::vector<NDArray> ys = nd::split_and_load(y, devices, /*even_split=*/false);
  std::vector<NDArray> losses;
  {
    auto recording = tandem::autograd::record();
    for (std::size_t d = 0; d < devices.size(); ++d) {
      losses.push_back(nd::softmax_cross_entropy(lenet(xs[d], device_params[d]), ys[d]).sum());
    }
  }
  for (const NDArray& loss : losses) tandem::autograd::backward(loss);
  for (std::size_t i = 0; i < device_params[0].size(); ++i) {
    std::vector<NDArray> grads;
    for (Params& params : device_params) grads.push_back(params[i].grad());
    allreduce(grads);
  }
  for (Params& params : device_params) sgd(params, lr, x.shape()[0]);
}

// d2l's evaluate_accuracy on devices[0]: the summed hits stay on the device until the end.
double evaluate_accuracy(tandem::data::DataLoader& test, const Params& params) {
  NDArray hits;
  std::int64_t count = 0;
  for (const tandem::data::Batch& batch : test) {
    const auto n = batch.data.shape()[0];
    NDArray batch_hits =
        nd::accuracy(lenet(batch.data, params), batch.label) * static_cast<double>(n);
    hits = hits.defined() ? hits + batch_hits : batch_hits;
    count += n;
  }
  return hits.scalar<double>() / static_cast<double>(count);
}

std::string device_list(const std::vector<tandem::Device>& devices) {
  std::string text = "[";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    text += (i ? ", " : "") + tandem::to_string(devices[i]);
  }
  return text + "]";
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--devices" && has_value) {
      if (!parse_devices(argv[++i], &flags.devices)) return usage();
    } else if (flag == "--epochs" && has_value) {
      flags.epochs = std::atoi(argv[++i]);
    } else if (flag == "--batch-size" && has_value) {
      flags.batch_size = std::atoll(argv[++i]);
    } else if (flag == "--lr" && has_value) {
      flags.lr = std::atof(argv[++i]);
    } else if (flag == "--limit" && has_value) {
      flags.limit = std::atoll(argv[++i]);
    } else if (flag == "--data" && has_value) {
      flags.data = argv[++i];
    } else if (flag == "--seed" && has_value) {
      flags.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--sync-each-batch") {
      flags.sync_each_batch = true;
    } else {
      return usage();
    }
  }
  if (flags.epochs < 1 || flags.batch_size < 1 || flags.limit < 0) return usage();
  for (const tandem::Device device : flags.devices) {
    if (device.id >= tandem::device_count(device.kind)) {
      std::printf("multi_device_scratch: skipped: %s is not present (%d %s device(s)%s)\n",
                  tandem::to_string(device).c_str(), tandem::device_count(device.kind),
                  tandem::kind_name(device.kind),
                  device.kind == tandem::DeviceKind::sim ? "; set TANDEM_SIM_DEVICES" : "");
      return 0;
    }
  }
  if (!tandem::data::mnist_available(flags.data)) {
    std::printf(
        "multi_device_scratch: skipped: no Fashion-MNIST in %s (apt-get install "
        "dataset-fashion-mnist, or --data DIR)\n",
        flags.data.c_str());
    return 0;
  }
  try {
    namespace data = tandem::data;
    nd::random::seed(flags.seed);
    // The bytes as they are; the loaders convert each batch to float32 in [0, 1] (d2l's
    // ToTensor) where it is used.
    data::MnistDataSet set =
        data::load_fashion_mnist(flags.data, {.image_dtype = nd::uint8, .scale_to_unit = false});
    auto limited = [&](const data::LabeledData& part) {
      const std::int64_t n = part.images.shape()[0];
      if (flags.limit == 0 || flags.limit >= n) return part;
      return data::LabeledData{part.images.slice(0, flags.limit),
                               part.labels.slice(0, flags.limit)};
    };
    const data::LabeledData train = limited(set.train), test = limited(set.test);
    // One device: the loader's batches land on it (pinned, prefetched, converted there). Several:
    // the batch stays on the cpu and split_and_load copies a part to each device, as the seed.
    const tandem::Device loader_device =
        flags.devices.size() == 1 ? flags.devices[0] : tandem::cpu();
    const data::Transforms to_tensor{.dtype = nd::float32, .scale = 1.0 / 255};
    data::DataLoader train_iter(train.images, train.labels,
                                {.batch_size = flags.batch_size,
                                 .shuffle = true,
                                 .seed = flags.seed,
                                 .device = loader_device,
                                 .transforms = to_tensor});
    data::DataLoader test_iter(
        test.images, test.labels,
        {.batch_size = flags.batch_size, .device = flags.devices[0], .transforms = to_tensor});
    std::printf("running on: %s\n", device_list(flags.devices).c_str());
    std::fflush(stdout);
    const Params params = init_params();
    std::vector<Params> device_params;
    for (const tandem::Device device : flags.devices) {
      device_params.push_back(get_params(params, device));
    }
    for (int epoch = 0; epoch < flags.epochs; ++epoch) {
      const auto start = std::chrono::steady_clock::now();
      for (const data::Batch& batch : train_iter) {
        train_batch(batch.data, batch.label, device_params, flags.devices, flags.lr);
        if (flags.sync_each_batch) nd::waitall();
      }
      nd::waitall();
      const double train_time = tandem_example::seconds_since(start);
      const double test_acc = evaluate_accuracy(test_iter, device_params[0]);
      std::printf("epoch %d, time %.1f sec, test acc %.2f\n", epoch + 1, train_time, test_acc);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "multi_device_scratch: %s\n", e.what());
    return 1;
  }
  return 0;
}
