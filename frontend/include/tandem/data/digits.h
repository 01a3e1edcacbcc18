// The handwritten digits data set (1797 8x8 grey images of the digits 0..9), as IDX files made
// by scripts/fetch-digits.sh from Debian's python3-sklearn package.
//
//   auto digits = tandem::data::load_digits("data/digits");
//   digits.train.images;   // float32 1497x8x8, pixel values scaled to [0, 1]
//   digits.train.labels;   // int32 1497, the digit
//   digits.test;           // the last 300 images of the set, the same way
//
// The split is fixed by the files: the first 1497 images train, the last 300 test.
#pragma once

#include <string>

#include "tandem/nd/ndarray.h"

namespace tandem::data {

// Images and their labels, row i of one labelling row i of the other.
struct LabeledData {
  nd::NDArray images;
  nd::NDArray labels;
};

struct DigitsDataSet {
  LabeledData train;
  LabeledData test;
};

struct DigitsOptions {
  nd::DType image_dtype = nd::float32;
  nd::DType label_dtype = nd::int32;
  // Divide the pixel values (0..16 in the files) by 16: images in [0, 1]. Needs a floating
  // image_dtype.
  bool scale_to_unit = true;
  Device device = cpu();
};

// The four file names, in `directory`: train-images-idx3-ubyte, train-labels-idx1-ubyte,
// test-images-idx3-ubyte, test-labels-idx1-ubyte.
inline constexpr const char* kDigitsFiles[4] = {"train-images-idx3-ubyte",
                                                "train-labels-idx1-ubyte", "test-images-idx3-ubyte",
                                                "test-labels-idx1-ubyte"};

// True when the four files are in `directory` (scripts/fetch-digits.sh has run).
bool digits_available(const std::string& directory);

// Reads the data set from `directory`. Throws tandem::Error naming the file that is missing or
// bad (and saying to run scripts/fetch-digits.sh when one is missing), or when the files'
// shapes are not those of the digits (Nx8x8 images, N labels).
DigitsDataSet load_digits(const std::string& directory, const DigitsOptions& options = {});

}  // namespace tandem::data
