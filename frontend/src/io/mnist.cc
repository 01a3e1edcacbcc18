// load_mnist / load_fashion_mnist: four IDX files through nd::read_idx (which gunzips), checked
// against each other before anything else is done with them.
#include <algorithm>
#include <filesystem>

#include "tandem/data/mnist.h"
#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/idx.h"

namespace tandem::data {
namespace {

// The file for `base` in `directory`: the plain one, else the .gz one; empty when neither is.
std::string find_file(const std::string& directory, const char* base) {
  const std::filesystem::path plain = std::filesystem::path(directory) / base;
  std::error_code error;
  if (std::filesystem::is_regular_file(plain, error)) return plain.string();
  std::filesystem::path gzipped = plain;
  gzipped += ".gz";
  if (std::filesystem::is_regular_file(gzipped, error)) return gzipped.string();
  return {};
}

[[noreturn]] void fail(const char* op, const std::string& problem) {
  throw Error(std::string("tandem: ") + op + ": " + problem);
}

LabeledData load_part(const char* op, const std::string& images_path,
                      const std::string& labels_path, const MnistOptions& options) {
  // Read as bytes first (the files hold uint8 pixels):
  // converting once on the target device is cheaper than converting on the host.
  nd::NDArray images = nd::read_idx(images_path, nd::uint8, cpu());
  nd::NDArray labels = nd::read_idx(labels_path, nd::int32, cpu());
  const nd::Shape& image_shape = images.shape();
  const nd::Shape& label_shape = labels.shape();
  if (image_shape.ndim() != 3 || image_shape[1] == 0 || image_shape[2] == 0) {
    fail(op, "'" + images_path + "' holds an array of shape " + image_shape.to_string() +
                 "; images are N x H x W (an idx3 file)");
  }
  if (label_shape.ndim() != 1) {
    fail(op, "'" + labels_path + "' holds an array of shape " + label_shape.to_string() +
                 "; labels are one value per image (an idx1 file)");
  }
  if (label_shape[0] != image_shape[0]) {
    fail(op, "'" + images_path + "' holds " + std::to_string(image_shape[0]) + " images but '" +
                 labels_path + "' holds " + std::to_string(label_shape[0]) +
                 " labels; the two files of a part must have one label per image");
  }
  const std::vector<std::int32_t> values = labels.to_vector<std::int32_t>();
  const auto bad =
      std::find_if(values.begin(), values.end(), [](std::int32_t v) { return v < 0 || v > 9; });
  if (bad != values.end()) {
    fail(op, "'" + labels_path + "' has the label " + std::to_string(*bad) + " at position " +
                 std::to_string(bad - values.begin()) + "; the classes are 0..9");
  }
  if (options.channel_axis) {
    images = images.reshape({image_shape[0], 1, image_shape[1], image_shape[2]});
  }
  images = images.as_in_context(options.device);
  labels = labels.as_in_context(options.device);
  if (options.image_dtype != nd::uint8) images = images.astype(options.image_dtype);
  if (options.label_dtype != nd::int32) labels = labels.astype(options.label_dtype);
  if (options.scale_to_unit) images = images / 255.0;
  return {images, labels};
}

MnistDataSet load(const char* op, const std::string& directory, const MnistOptions& options,
                  bool default_directory) {
  if (!ops::is_valid(options.image_dtype) || !ops::is_valid(options.label_dtype)) {
    fail(op, "image_dtype or label_dtype is not a dtype");
  }
  if (options.scale_to_unit && !ops::is_floating(options.image_dtype)) {
    fail(op, std::string("scale_to_unit needs a floating image_dtype, not ") +
                 nd::dtype_name(options.image_dtype) + " (or set scale_to_unit = false)");
  }
  if (options.label_dtype == nd::uint8) {
    fail(op, "label_dtype uint8 is refused: labels are computed with (int32 or int64)");
  }
  std::string paths[4];
  for (int i = 0; i < 4; ++i) {
    paths[i] = find_file(directory, kMnistFiles[i]);
    if (paths[i].empty()) {
      const std::string where = (std::filesystem::path(directory) / kMnistFiles[i]).string();
      fail(op, "neither '" + where + "' nor '" + where + ".gz' exists" +
                   (default_directory ? std::string("; install Debian's dataset-fashion-mnist "
                                                    "(bash scripts/setup.sh --bench)")
                                      : std::string("; pass the directory that holds the four "
                                                    "IDX files")));
    }
  }
  return {load_part(op, paths[0], paths[1], options), load_part(op, paths[2], paths[3], options)};
}

}  // namespace

bool mnist_available(const std::string& directory) {
  return std::all_of(std::begin(kMnistFiles), std::end(kMnistFiles),
                     [&](const char* base) { return !find_file(directory, base).empty(); });
}

MnistDataSet load_mnist(const std::string& directory, const MnistOptions& options) {
  return load("load_mnist", directory, options, directory == kFashionMnistDirectory);
}

MnistDataSet load_fashion_mnist(const std::string& directory, const MnistOptions& options) {
  return load("load_fashion_mnist", directory, options, directory == kFashionMnistDirectory);
}

}  // namespace tandem::data
