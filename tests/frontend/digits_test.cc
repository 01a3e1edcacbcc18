// The digits data set as scripts/fetch-digits.sh writes it: the fixed split, shapes, value
// ranges and a few known labels; a DataLoader epoch over it on sim(0). Skipped, with a message,
// when the files are absent.
#include <set>

#include "frontend_test_util.h"
#include "scratch_dir.h"
#include "tandem/data/data_loader.h"
#include "tandem/data/digits.h"

namespace tandem::testing {
namespace {

// Set by tests/frontend/CMakeLists.txt: <source tree>/data/digits.
constexpr const char* kDigitsDir = TANDEM_DIGITS_DIR;

bool have_digits() {
  if (data::digits_available(kDigitsDir)) return true;
  MESSAGE("SKIPPED: the digits data set is not in " << std::string(kDigitsDir)
                                                    << " (run scripts/fetch-digits.sh)");
  return false;
}

}  // namespace

TEST_SUITE("frontend.digits") {
  TEST_CASE("the digits load as 1497 training and 300 test images with labels 0..9") {
    if (!have_digits()) return;
    const data::DigitsDataSet digits = data::load_digits(kDigitsDir);
    CHECK(digits.train.images.shape() == Shape{1497, 8, 8});
    CHECK(digits.train.labels.shape() == Shape{1497});
    CHECK(digits.test.images.shape() == Shape{300, 8, 8});
    CHECK(digits.test.labels.shape() == Shape{300});
    CHECK(digits.train.images.dtype() == nd::float32);
    CHECK(digits.train.labels.dtype() == nd::int32);
    CHECK(digits.train.images.min().scalar<float>() == 0.0f);
    CHECK(digits.train.images.max().scalar<float>() == 1.0f);  // 16 / 16
    // The CSV's first two rows are a 0 and a 1; the test set starts 6, 3, 2, 1, 7, 4.
    const auto train_labels = digits.train.labels.to_vector<std::int32_t>();
    CHECK(train_labels[0] == 0);
    CHECK(train_labels[1] == 1);
    const auto test_labels = digits.test.labels.to_vector<std::int32_t>();
    CHECK(std::vector<std::int32_t>(test_labels.begin(), test_labels.begin() + 6) ==
          std::vector<std::int32_t>{6, 3, 2, 1, 7, 4});
    CHECK(std::set<std::int32_t>(test_labels.begin(), test_labels.end()).size() == 10);
    const data::DigitsDataSet raw =
        data::load_digits(kDigitsDir, {.image_dtype = nd::int32, .scale_to_unit = false});
    CHECK(raw.test.images.max().scalar<std::int32_t>() == 16);
  }

  TEST_CASE("a DataLoader epoch over the digits on sim(0) serves every training image once") {
    if (!have_digits()) return;
    const data::DigitsDataSet digits = data::load_digits(kDigitsDir);
    data::DataLoader loader(digits.train.images, digits.train.labels,
                            {.batch_size = 64, .shuffle = true, .seed = 1, .device = sim(0)});
    NDArray label_sum = nd::zeros({1}, nd::int32, sim(0));
    NDArray pixel_sum = nd::zeros({1}, sim(0));
    std::int64_t samples = 0;
    for (const data::Batch& batch : loader) {
      label_sum += batch.label.sum();
      pixel_sum += batch.data.sum();
      samples += batch.label.size();
    }
    CHECK(samples == 1497);
    CHECK(label_sum.scalar<std::int64_t>() == digits.train.labels.sum().scalar<std::int64_t>());
    CHECK(pixel_sum.scalar<double>() ==
          doctest::Approx(digits.train.images.sum().scalar<double>()).epsilon(1e-5));
  }

  TEST_CASE("a missing data set names the file and the script to run") {
    ScratchDir dir;
    CHECK_FALSE(data::digits_available(dir.file("")));
    CHECK_THROWS_WITH_AS(data::load_digits(dir.file("")),
                         doctest::Contains("train-images-idx3-ubyte' does not exist; run "
                                           "scripts/fetch-digits.sh"),
                         Error);
  }

  TEST_CASE("files of the wrong shape are refused, naming the file") {
    ScratchDir dir;
    nd::write_idx(dir.file("train-images-idx3-ubyte"), nd::zeros({5, 8, 7}), nd::IdxType::uint8);
    nd::write_idx(dir.file("train-labels-idx1-ubyte"), nd::zeros({5}), nd::IdxType::uint8);
    nd::write_idx(dir.file("test-images-idx3-ubyte"), nd::zeros({2, 8, 8}), nd::IdxType::uint8);
    nd::write_idx(dir.file("test-labels-idx1-ubyte"), nd::zeros({3}), nd::IdxType::uint8);
    CHECK_THROWS_WITH_AS(data::load_digits(dir.file("")),
                         doctest::Contains("holds an array of shape 5x8x7"), Error);
    nd::write_idx(dir.file("train-images-idx3-ubyte"), nd::zeros({5, 8, 8}), nd::IdxType::uint8);
    CHECK_THROWS_WITH_AS(data::load_digits(dir.file("")),
                         doctest::Contains("holds labels of shape 3 for the 2 images"), Error);
  }
}

}  // namespace tandem::testing
