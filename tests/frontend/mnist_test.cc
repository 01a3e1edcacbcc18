// data::load_mnist / load_fashion_mnist and read_idx of gzipped files: small IDX files the tests
// write themselves (plain and .gz), read back with their values; a clear tandem::Error naming
// the file for a missing, truncated or corrupt file (IDX or gzip), for image and label counts
// that differ, and for labels outside 0..9. The real Fashion-MNIST (Debian's
// dataset-fashion-mnist) is checked when it is installed and skipped with a message otherwise.
#include <algorithm>
#include <filesystem>
#include <string>

#include "frontend_test_util.h"
#include "gzip_writer.h"
#include "scratch_dir.h"
#include "tandem/data/mnist.h"

namespace tandem::testing {
namespace {

// n images of h x w: pixel k of image i is (7 i + k) % 256; labels i % 10.
struct Part {
  std::vector<std::int32_t> pixels;
  std::vector<std::int32_t> labels;
};
Part numbered_part(std::int64_t n, std::int64_t h, std::int64_t w) {
  Part part;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k = 0; k < h * w; ++k) {
      part.pixels.push_back(static_cast<std::int32_t>((7 * i + k) % 256));
    }
    part.labels.push_back(static_cast<std::int32_t>(i % 10));
  }
  return part;
}

// Writes `base` (uint8 IDX) in `dir`, gzipped when `gz`.
void write_part_file(const ScratchDir& dir, const std::string& base, const NDArray& array,
                     bool gz) {
  const std::string plain = dir.file(base);
  nd::write_idx(plain, array, nd::IdxType::uint8);
  if (gz) {
    write_bytes(plain + ".gz", gzip_bytes(read_bytes(plain)));
    std::filesystem::remove(plain);
  }
}

// A data set of 12 training and 5 test images of 4 x 3, the training files gzipped when `gz`.
void write_data_set(const ScratchDir& dir, bool gz) {
  const Part train = numbered_part(12, 4, 3);
  const Part test = numbered_part(5, 4, 3);
  write_part_file(dir, data::kMnistFiles[0], nd::from_vector(train.pixels, {12, 4, 3}), gz);
  write_part_file(dir, data::kMnistFiles[1], nd::from_vector(train.labels), gz);
  write_part_file(dir, data::kMnistFiles[2], nd::from_vector(test.pixels, {5, 4, 3}), false);
  write_part_file(dir, data::kMnistFiles[3], nd::from_vector(test.labels), false);
}

std::string load_error(const std::string& directory) {
  try {
    data::load_mnist(directory);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("load_mnist('" << directory << "') did not throw");
  return {};
}

}  // namespace

TEST_SUITE("frontend.mnist") {
  TEST_CASE("read_idx reads a gzipped file as the plain one, and uint8 keeps the bytes") {
    ScratchDir dir;
    const Part part = numbered_part(3, 5, 4);
    const NDArray images = nd::from_vector(part.pixels, {3, 5, 4});
    write_part_file(dir, "images", images, false);
    write_part_file(dir, "images-gz", images, true);
    const NDArray plain = nd::read_idx(dir.file("images"));
    const NDArray gz = nd::read_idx(dir.file("images-gz.gz"));
    CHECK(gz.shape() == Shape{3, 5, 4});
    CHECK(gz.to_vector<std::int32_t>() == part.pixels);
    CHECK(plain.to_vector<std::int32_t>() == part.pixels);
    const NDArray bytes = nd::read_idx(dir.file("images-gz.gz"), nd::uint8, sim(0));
    CHECK(bytes.dtype() == nd::uint8);
    CHECK(bytes.device() == sim(0));
    CHECK(bytes.to_vector<std::int32_t>() == part.pixels);
  }

  TEST_CASE("a gzip file cut short at any byte, or damaged, is an error naming the file") {
    ScratchDir dir;
    const Part part = numbered_part(4, 6, 6);
    write_part_file(dir, "x", nd::from_vector(part.pixels, {4, 6, 6}), true);
    const std::string path = dir.file("x.gz");
    const std::vector<unsigned char> good = read_bytes(path);
    for (std::size_t size = 2; size < good.size(); ++size) {
      CAPTURE(size);
      write_bytes(path, std::vector<unsigned char>(good.begin(), good.begin() + size));
      std::string message;
      try {
        nd::read_idx(path);
      } catch (const Error& e) {
        message = e.what();
      }
      CHECK(message.find("'" + path + "'") != std::string::npos);
      CHECK((message.find("truncated") != std::string::npos ||
             message.find("corrupt") != std::string::npos));
    }
    // A flipped byte in the compressed data or the checksum: corrupt, never a crash.
    for (std::size_t at : {good.size() / 2, good.size() - 6}) {
      std::vector<unsigned char> bad = good;
      bad[at] ^= 0x55;
      write_bytes(path, bad);
      CHECK_THROWS_WITH_AS(nd::read_idx(path), doctest::Contains(path.c_str()), Error);
    }
    // Junk after the stream.
    std::vector<unsigned char> trailing = good;
    trailing.insert(trailing.end(), {1, 2, 3});
    write_bytes(path, trailing);
    CHECK_THROWS_WITH_AS(nd::read_idx(path), doctest::Contains("not gzip follow"), Error);
  }

  TEST_CASE("load_mnist reads plain and gzipped files: float images in [0, 1] with a channel") {
    ScratchDir dir;
    write_data_set(dir, true);
    CHECK(data::mnist_available(dir.file("")));
    const data::MnistDataSet set = data::load_mnist(dir.file(""));
    CHECK(set.train.images.shape() == Shape{12, 1, 4, 3});
    CHECK(set.train.images.dtype() == nd::float32);
    CHECK(set.train.labels.shape() == Shape{12});
    CHECK(set.train.labels.dtype() == nd::int32);
    CHECK(set.test.images.shape() == Shape{5, 1, 4, 3});
    const Part train = numbered_part(12, 4, 3);
    const std::vector<float> pixels = set.train.images.to_vector<float>();
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      CHECK(pixels[i] == static_cast<float>(train.pixels[i]) / 255.0f);
    }
    CHECK(set.train.labels.to_vector<std::int32_t>() == train.labels);
    // The bytes as they are, without a channel axis, on sim(0).
    const data::MnistDataSet raw = data::load_fashion_mnist(dir.file(""), {.image_dtype = nd::uint8,
                                                                           .scale_to_unit = false,
                                                                           .channel_axis = false,
                                                                           .device = sim(0)});
    CHECK(raw.train.images.shape() == Shape{12, 4, 3});
    CHECK(raw.train.images.dtype() == nd::uint8);
    CHECK(raw.train.images.device() == sim(0));
    CHECK(raw.train.images.to_vector<std::int32_t>() == train.pixels);
  }

  TEST_CASE("missing files, mismatched counts and bad labels are errors naming the files") {
    ScratchDir dir;
    CHECK_FALSE(data::mnist_available(dir.file("")));
    CHECK(load_error(dir.file("")).find("train-images-idx3-ubyte.gz' exists") != std::string::npos);
    write_data_set(dir, false);
    // 11 labels for 12 images.
    const Part train = numbered_part(12, 4, 3);
    nd::write_idx(
        dir.file(data::kMnistFiles[1]),
        nd::from_vector(std::vector<std::int32_t>(train.labels.begin(), train.labels.end() - 1)),
        nd::IdxType::uint8);
    std::string message = load_error(dir.file(""));
    CHECK(message.find("holds 12 images but") != std::string::npos);
    CHECK(message.find("holds 11 labels") != std::string::npos);
    CHECK(message.find(data::kMnistFiles[0]) != std::string::npos);
    // A label of 10.
    std::vector<std::int32_t> labels = train.labels;
    labels[4] = 10;
    nd::write_idx(dir.file(data::kMnistFiles[1]), nd::from_vector(labels), nd::IdxType::uint8);
    CHECK(load_error(dir.file("")).find("has the label 10 at position 4") != std::string::npos);
    // Images that are not N x H x W.
    write_data_set(dir, false);
    nd::write_idx(dir.file(data::kMnistFiles[2]), nd::from_vector(train.pixels),
                  nd::IdxType::uint8);
    CHECK(load_error(dir.file("")).find("images are N x H x W") != std::string::npos);
    // A truncated image file names the file.
    write_data_set(dir, false);
    std::vector<unsigned char> bytes = read_bytes(dir.file(data::kMnistFiles[0]));
    bytes.resize(bytes.size() - 5);
    write_bytes(dir.file(data::kMnistFiles[0]), bytes);
    message = load_error(dir.file(""));
    CHECK(message.find("truncated") != std::string::npos);
    CHECK(message.find(data::kMnistFiles[0]) != std::string::npos);
    // Options it cannot honour.
    write_data_set(dir, false);
    CHECK_THROWS_WITH_AS(data::load_mnist(dir.file(""), {.image_dtype = nd::int32}),
                         doctest::Contains("scale_to_unit needs a floating image_dtype"), Error);
    CHECK_THROWS_WITH_AS(data::load_mnist(dir.file(""), {.label_dtype = nd::uint8}),
                         doctest::Contains("label_dtype uint8"), Error);
  }

  TEST_CASE("the real Fashion-MNIST, when Debian's dataset-fashion-mnist is installed") {
    if (!data::mnist_available()) {
      MESSAGE("SKIPPED: " << data::kFashionMnistDirectory
                          << " has no Fashion-MNIST (apt-get install dataset-fashion-mnist)");
      return;
    }
    const data::MnistDataSet set = data::load_fashion_mnist(
        data::kFashionMnistDirectory, {.image_dtype = nd::uint8, .scale_to_unit = false});
    CHECK(set.train.images.shape() == Shape{60000, 1, 28, 28});
    CHECK(set.test.images.shape() == Shape{10000, 1, 28, 28});
    // Every class appears 6,000 times in the training set and 1,000 in the test set.
    const std::vector<std::int32_t> labels = set.test.labels.to_vector<std::int32_t>();
    for (int c = 0; c < 10; ++c) {
      CHECK(std::count(labels.begin(), labels.end(), c) == 1000);
    }
  }
}

}  // namespace tandem::testing
