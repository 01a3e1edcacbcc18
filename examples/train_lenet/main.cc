// train_lenet: trains a network on the handwritten digits and prints, per epoch, the loss, the
// train and test accuracy and the time.
//
//   build/examples/train_lenet/train_lenet [--model lenet|mlp] [--device cpu|sim0|cuda0]
//       [--epochs N] [--batch-size N] [--optimizer sgd|adam] [--lr X] [--data DIR] [--quick]
//       [--export PREFIX]
//
// --export PREFIX: after training, nn::export_block writes PREFIX-graph.json and
// PREFIX-params.tnd (the network alone: it takes standardized images when --standardize is on),
// loads them back as an nn::ImportedBlock and prints its test accuracy.
//
// The data set comes from scripts/fetch-digits.sh (data/digits). The loop (training.h) never
// waits inside an epoch; the end-of-epoch print is its only sync point. The models are in
// models.h. docs/user-guide.md ("Training") walks through this program.
#include <tandem/tandem.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "training.h"

namespace {

struct Flags {
  tandem::examples::TrainingOptions training;
  int epochs = 20;
  bool cosine = true;
  std::string data_dir = TANDEM_DIGITS_DIR;
  std::string export_prefix;  // empty: no export
};

int usage() {
  std::fprintf(stderr,
               "usage: train_lenet [--model %s] [--device cpu|sim0|cuda0] [--epochs N]\n"
               "                   [--batch-size N] [--optimizer sgd|adam] [--lr X] [--wd X]\n"
               "                   [--shift PIXELS] [--schedule cosine|constant]\n"
               "                   [--standardize on|off] [--seed N] [--data DIR] [--quick]\n"
               "                   [--export PREFIX]\n",
               tandem::examples::model_names().c_str());
  return 2;
}

// "cpu", "sim0", "sim1", "cuda0", ...; false for anything else.
bool parse_device(const std::string& text, tandem::Device& device) {
  const auto with_id = [&](const char* kind_text, tandem::DeviceKind kind) {
    const std::size_t length = std::strlen(kind_text);
    if (text.rfind(kind_text, 0) != 0 || text.size() == length) return false;
    device = tandem::Device{kind, std::atoi(text.c_str() + length)};
    return true;
  };
  if (text == "cpu" || text == "cpu0") {
    device = tandem::cpu();
    return true;
  }
  return with_id("sim", tandem::DeviceKind::sim) || with_id("cuda", tandem::DeviceKind::cuda);
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--quick") {
      flags.epochs = 2;
    } else if (flag == "--model" && has_value) {
      flags.training.model = argv[++i];
    } else if (flag == "--device" && has_value) {
      if (!parse_device(argv[++i], flags.training.device)) return usage();
    } else if (flag == "--epochs" && has_value) {
      flags.epochs = std::atoi(argv[++i]);
    } else if (flag == "--batch-size" && has_value) {
      flags.training.batch_size = std::atoll(argv[++i]);
    } else if (flag == "--optimizer" && has_value) {
      flags.training.optimizer = argv[++i];
    } else if (flag == "--lr" && has_value) {
      flags.training.learning_rate = std::atof(argv[++i]);
    } else if (flag == "--wd" && has_value) {
      flags.training.weight_decay = std::atof(argv[++i]);
    } else if (flag == "--schedule" && has_value) {
      const std::string value = argv[++i];
      if (value != "cosine" && value != "constant") return usage();
      flags.cosine = value == "cosine";
    } else if (flag == "--standardize" && has_value) {
      const std::string value = argv[++i];
      if (value != "on" && value != "off") return usage();
      flags.training.standardize = value == "on";
    } else if (flag == "--shift" && has_value) {
      flags.training.shift = std::atof(argv[++i]);
      if (flags.training.shift < 0 || flags.training.shift > 1) return usage();
    } else if (flag == "--seed" && has_value) {
      flags.training.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--data" && has_value) {
      flags.data_dir = argv[++i];
    } else if (flag == "--export" && has_value) {
      flags.export_prefix = argv[++i];
    } else {
      return usage();
    }
  }
  if (!tandem::device_available(flags.training.device)) {
    std::printf("SKIPPED: %s is not present\n", tandem::to_string(flags.training.device).c_str());
    return 0;
  }
  if (!tandem::data::digits_available(flags.data_dir)) {
    std::printf("SKIPPED: the digits are not in %s (run scripts/fetch-digits.sh)\n",
                flags.data_dir.c_str());
    return 0;
  }
  try {
    const auto digits = tandem::data::load_digits(flags.data_dir);
    flags.training.schedule_epochs = flags.cosine ? flags.epochs : 0;
    tandem::examples::DigitsTraining training(digits, flags.training);
    std::printf(
        "%s on %s: %lld training and %lld test images, batch %lld, %s lr %g wd %g, "
        "shift %g\n",
        flags.training.model.c_str(), tandem::to_string(flags.training.device).c_str(),
        static_cast<long long>(digits.train.images.shape()[0]),
        static_cast<long long>(digits.test.images.shape()[0]),
        static_cast<long long>(flags.training.batch_size), flags.training.optimizer.c_str(),
        flags.training.learning_rate, flags.training.weight_decay, flags.training.shift);
    std::printf("%6s %10s %10s %10s %9s\n", "epoch", "loss", "train acc", "test acc", "time");
    for (int epoch = 0; epoch < flags.epochs; ++epoch) {
      const tandem::examples::EpochResult result = training.run_epoch();
      std::printf("%6d %10.4f %10.4f %10.4f %7.3f s\n", result.epoch, result.loss,
                  result.train_accuracy, result.test_accuracy, result.seconds);
    }
    if (!flags.export_prefix.empty()) {
      const tandem::nn::ExportedFiles files = tandem::nn::export_block(
          training.net(), training.test_images().slice(0, 64), flags.export_prefix);
      const auto model =
          tandem::nn::ImportedBlock::load(files.graph, files.params, flags.training.device);
      const double accuracy =
          tandem::nd::accuracy((*model)(training.test_images()), training.test_labels())
              .scalar<double>();
      std::printf("exported %s and %s (%zu ops); loaded back, test accuracy %.4f\n",
                  files.graph.c_str(), files.params.c_str(), model->num_nodes(), accuracy);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "train_lenet: %s\n", error.what());
    return 1;
  }
  return 0;
}
