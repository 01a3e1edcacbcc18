// MNIST and Fashion-MNIST (60,000 training and 10,000 test images of 28x28 grey pixels, ten
// classes), from their four IDX files, gzipped or not.
//
//   auto fashion = tandem::data::load_fashion_mnist();  // Debian's dataset-fashion-mnist
//   fashion.train.images;  // float32 60000x1x28x28, pixels scaled to [0, 1]
//   fashion.train.labels;  // int32 60000, the class 0..9
//   fashion.test;          // the 10,000 test images, the same way
//
//   // The bytes as they are (a quarter of the memory), converted per batch by the DataLoader:
//   auto raw = tandem::data::load_mnist(dir, {.image_dtype = nd::uint8, .scale_to_unit = false});
//
// The files, in `directory`: train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each either as it is or with ".gz" (the
// plain file is taken when both exist). Debian's package `dataset-fashion-mnist` (installed by
// `scripts/setup.sh --bench`) puts the gzipped ones in kFashionMnistDirectory.
#pragma once

#include <string>

#include "tandem/data/digits.h"
#include "tandem/nd/ndarray.h"

namespace tandem::data {

inline constexpr const char* kFashionMnistDirectory = "/usr/share/datasets/fashion-mnist";

// The base names of the four files (train images, train labels, test images, test labels).
inline constexpr const char* kMnistFiles[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

// The ten class names of Fashion-MNIST, by label (d2l's get_fashion_mnist_labels).
inline constexpr const char* kFashionMnistClasses[10] = {
    "t-shirt", "trouser", "pullover", "dress", "coat",
    "sandal",  "shirt",   "sneaker",  "bag",   "ankle boot"};

struct MnistDataSet {
  LabeledData train;
  LabeledData test;
};

struct MnistOptions {
  // float32/float64 (with scale_to_unit: pixels / 255), int32, int64, or uint8 (the file's bytes).
  nd::DType image_dtype = nd::float32;
  nd::DType label_dtype = nd::int32;
  // Divide the pixels (0..255 in the files) by 255: images in [0, 1], as d2l's ToTensor. Needs a
  // floating image_dtype.
  bool scale_to_unit = true;
  // Images as N x 1 x H x W (a channel axis, what Conv2D takes) rather than N x H x W.
  bool channel_axis = true;
  Device device = cpu();
};

// True when the four files (plain or .gz) are in `directory`.
bool mnist_available(const std::string& directory = kFashionMnistDirectory);

// Reads the four files of `directory`. Throws tandem::Error naming the file that is missing
// (and the Debian package to install for the default directory), truncated or corrupt (IDX or
// gzip), not of the data set's shape (images N x H x W of uint8, labels N of uint8), with label
// values outside 0..9, or whose image and label counts differ (both counts and both files
// named); or for options it cannot honour (scale_to_unit with an integer image_dtype).
MnistDataSet load_mnist(const std::string& directory, const MnistOptions& options = {});

// The same files, by the name of the data set they hold, with Debian's directory by default.
MnistDataSet load_fashion_mnist(const std::string& directory = kFashionMnistDirectory,
                                const MnistOptions& options = {});

}  // namespace tandem::data
