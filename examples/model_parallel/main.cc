// model_parallel: the seeds' model-parallel programs on two devices.
//
//   build/examples/model_parallel/model_parallel [--quick] [--devices A,B] [--digits DIR]
//
// 1. Chainer's ParallelMLP (parallel_mlp.h) trained on the digits: two branches, one per device,
//    exchanging activations after their first halves; the same network is trained on the first
//    device alone from the same initial values, and the losses of the two runs are compared
//    (equal bit for bit on sim, whose kernels are the CPU's).
// 2. PyTorch's two-GPU split (the tutorial's ModelParallelResNet50): the first half of a network's
//    layers on one device, the second half on the other, against the whole network on one
//    device, in seconds per training step. The seed's point: model parallel alone is not faster,
//    the devices take turns (pipeline_parallel makes them work at the same time).
// The devices default to sim(0) and sim(1) (sim model: two_device_sim_model.h); any pair with a
// copy path works: cpu(0),sim(0), cuda(0),cuda(1). Without two devices it prints SKIPPED.
#include <tandem/data/data_loader.h>
#include <tandem/data/digits.h>
#include <tandem/nd/autograd.h>
#include <tandem/nd/network.h>
#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "parallel_mlp.h"
#include "step_timing.h"
#include "two_device_sim_model.h"
#include "two_devices.h"

namespace ex = tandem::examples;
namespace nd = tandem::nd;
namespace nn = tandem::nn;

namespace {

struct Flags {
  bool quick = false;
  std::vector<tandem::Device> devices{tandem::sim(0), tandem::sim(1)};
  std::string digits_dir = TANDEM_DIGITS_DIR;
};

bool parse(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      flags.quick = true;
    } else if (arg == "--devices" && has_value) {
      if (!ex::parse_device_pair(argv[++i], flags.devices)) return false;
    } else if (arg == "--digits" && has_value) {
      flags.digits_dir = argv[++i];
    } else {
      return false;
    }
  }
  return true;
}

// Trains `net` (its parameters already placed) for `epochs` on the digits; returns each epoch's
// mean training loss and prints it with the test accuracy.
std::vector<double> train(ex::ParallelMLP& net, const tandem::data::DigitsDataSet& digits,
                          int epochs, const char* label) {
  nn::Trainer trainer(net.collect_params(), nn::Adam(0.01));
  tandem::data::DataLoader loader(digits.train.images, digits.train.labels,
                                  {.batch_size = 64, .shuffle = true, .seed = 1});
  std::vector<double> losses;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    nd::NDArray total;
    for (const tandem::data::Batch& batch : loader) {
      nd::NDArray loss;
      {
        auto recording = tandem::autograd::record();
        const nd::NDArray logits = net(batch.data.reshape({batch.data.shape()[0], -1}));
        loss = nd::softmax_cross_entropy(logits, batch.label.as_in_context(logits.device())).sum();
      }
      loss.backward();
      trainer.step(batch.data.shape()[0]);
      total = total.defined() ? total + loss.detach() : loss.detach();
    }
    const nd::NDArray& test = digits.test.images;
    const nd::NDArray logits = net(test.reshape({test.shape()[0], -1}));
    const double accuracy =
        nd::accuracy(logits, digits.test.labels.as_in_context(logits.device())).scalar();
    losses.push_back(total.scalar() / static_cast<double>(loader.num_samples()));
    std::printf("  %-24s epoch %d: loss %.4f, test accuracy %.4f\n", label, epoch + 1,
                losses.back(), accuracy);
  }
  return losses;
}

// Part 1: returns false when the two runs disagree.
bool parallel_mlp(const Flags& flags) {
  if (!tandem::data::digits_available(flags.digits_dir)) {
    std::printf("ParallelMLP: SKIPPED: the digits are not in %s (run scripts/fetch-digits.sh)\n",
                flags.digits_dir.c_str());
    return true;
  }
  const tandem::Device first = flags.devices[0], second = flags.devices[1];
  std::printf("ParallelMLP on the digits: branch 0 on %s, branch 1 on %s\n",
              tandem::to_string(first).c_str(), tandem::to_string(second).c_str());
  const auto digits = tandem::data::load_digits(flags.digits_dir);
  const int epochs = flags.quick ? 1 : 5;
  ex::ParallelMLP split(256, 10, first, second), alone(256, 10, first, first);
  split.initialize_on_devices(nn::Xavier());
  alone.initialize_on_devices(nn::Zeros());
  // Run the first forward so that the deferred shapes exist, then copy the initial values.
  const nd::NDArray probe = digits.train.images.slice(0, 1).reshape({1, -1});
  split(probe);
  alone(probe);
  const nn::ParameterDict from = split.collect_params(), to = alone.collect_params();
  auto source = from.begin();
  for (const auto& entry : to) entry.second->set_data((source++)->second->data());
  const std::vector<double> split_losses = train(split, digits, epochs, "two devices");
  const std::vector<double> alone_losses = train(alone, digits, epochs, "one device");
  double difference = 0;
  for (std::size_t i = 0; i < split_losses.size(); ++i) {
    difference = std::max(difference, std::abs(split_losses[i] - alone_losses[i]));
  }
  std::printf("  largest difference of the epoch losses, two devices vs one: %.3g\n", difference);
  return difference <= 1e-4;
}

// Part 2.
void split_network(const Flags& flags) {
  ex::TwoStageShape shape;
  ex::StepTimingOptions timing{.steps = 3, .rounds = 3};
  if (flags.quick) {
    shape.width = shape.features = 256;
    shape.layers_per_stage = 2;
    timing.steps = 1;
    timing.rounds = 1;
  }
  const ex::StepTimer timer(shape, flags.devices[0], flags.devices[1]);
  const double one = timer.seconds_per_step(ex::Placement::one_device, timing);
  const double split = timer.seconds_per_step(ex::Placement::model_parallel, timing);
  std::printf(
      "\nthe network split in two (batch %lld, %d + %d dense layers of %lld units):\n"
      "  %-16s %.4f s/step\n  %-16s %.4f s/step (%.2fx one device)\n",
      static_cast<long long>(shape.batch), shape.layers_per_stage, shape.layers_per_stage + 1,
      static_cast<long long>(shape.width), "one device", one, "model parallel", split, one / split);
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  try {
    if (!parse(argc, argv, flags)) {
      std::fprintf(stderr, "usage: model_parallel [--quick] [--devices A,B] [--digits DIR]\n");
      return 2;
    }
    ex::use_two_device_sim_model();
    if (!ex::both_devices_present(flags.devices[0], flags.devices[1])) return 0;
    const bool same = parallel_mlp(flags);
    split_network(flags);
    if (!same) {
      std::printf("mismatch: the two-device ParallelMLP did not train like the one-device one\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "model_parallel: %s\n", e.what());
    return 1;
  }
  return 0;
}
