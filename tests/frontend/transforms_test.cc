// The DataLoader's transforms: normalisation against a hand computation (per channel, uint8
// in, on cpu and sim), random crops and flips that are one of the shifted/mirrored copies of
// their image computed here by hand, the same per seed and different across seeds and epochs,
// and transforms the data cannot take refused at construction with a clear error.
#include <set>

#include "frontend_test_util.h"
#include "tandem/data/data_loader.h"

namespace tandem::testing {
namespace {

using data::DataLoader;
using data::Transforms;

// n images of c x h x w, uint8: pixel k of image i is (i * 31 + k * 7) % 256 + 1 (never 0, so a
// padded zero is told apart from a pixel); labels i.
struct Images {
  NDArray data;
  NDArray labels;
  std::vector<std::vector<int>> pixels;  // per image, row-major
};
Images numbered_images(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  Images images;
  std::vector<std::uint8_t> bytes;
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<int> image;
    for (std::int64_t k = 0; k < c * h * w; ++k) {
      image.push_back(static_cast<int>((i * 31 + k * 7) % 255 + 1));
      bytes.push_back(static_cast<std::uint8_t>(image.back()));
    }
    images.pixels.push_back(image);
    labels.push_back(static_cast<std::int32_t>(i));
  }
  images.data = nd::from_vector(bytes, {n, c, h, w});
  images.labels = nd::from_vector(labels);
  return images;
}

// Image `image` (c x h x w) padded with p zeros, cropped at (top, left), mirrored when `flip`.
std::vector<int> by_hand(const std::vector<int>& image, std::int64_t c, std::int64_t h,
                         std::int64_t w, int p, std::int64_t top, std::int64_t left, bool flip) {
  std::vector<int> out;
  for (std::int64_t ch = 0; ch < c; ++ch) {
    for (std::int64_t y = 0; y < h; ++y) {
      for (std::int64_t x = 0; x < w; ++x) {
        const std::int64_t sy = y + top - p;
        const std::int64_t sx = (flip ? w - 1 - x : x) + left - p;
        const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
        out.push_back(inside ? image[static_cast<std::size_t>(ch * h * w + sy * w + sx)] : 0);
      }
    }
  }
  return out;
}

// Every batch's images of one epoch, in the order served, as ints.
std::vector<std::vector<int>> epoch_images(DataLoader& loader, std::vector<int>* labels) {
  std::vector<std::vector<int>> images;
  for (const data::Batch& batch : loader) {
    const std::int64_t rows = batch.data.shape()[0];
    const std::vector<std::int32_t> values = batch.data.to_vector<std::int32_t>();
    const auto size = values.size() / static_cast<std::size_t>(rows);
    for (std::int64_t r = 0; r < rows; ++r) {
      images.emplace_back(values.begin() + static_cast<std::ptrdiff_t>(r * size),
                          values.begin() + static_cast<std::ptrdiff_t>((r + 1) * size));
    }
    if (labels != nullptr) {
      for (std::int32_t l : batch.label.to_vector<std::int32_t>()) labels->push_back(l);
    }
  }
  return images;
}

}  // namespace

TEST_SUITE("frontend.transforms") {
  TEST_CASE("normalisation is (x * scale - mean) / stddev per channel, on the batch's device") {
    const Images images = numbered_images(6, 3, 2, 2);
    const std::vector<double> mean{0.1, 0.5, -0.2}, stddev{0.5, 2.0, 0.25};
    const double scale = 1.0 / 255;
    for (Device device : {cpu(), sim(0)}) {
      INFO(to_string(device));
      DataLoader loader(
          images.data, images.labels,
          {.batch_size = 4,
           .device = device,
           .transforms = {.dtype = nd::float32, .scale = scale, .mean = mean, .stddev = stddev}});
      for (const data::Batch& batch : loader) {
        CHECK(batch.data.device() == device);
        CHECK(batch.data.dtype() == nd::float32);
        const std::vector<float> got = batch.data.to_vector<float>();
        const std::vector<std::int32_t> labels = batch.label.to_vector<std::int32_t>();
        for (std::size_t r = 0; r < labels.size(); ++r) {
          const std::vector<int>& image = images.pixels[static_cast<std::size_t>(labels[r])];
          for (std::size_t k = 0; k < image.size(); ++k) {
            const std::size_t channel = k / 4;
            const double expected = (image[k] * scale - mean[channel]) / stddev[channel];
            CHECK(got[r * 12 + k] == doctest::Approx(expected).epsilon(1e-6));
          }
        }
      }
    }
    // One value for every channel; float64 data keeps its dtype.
    DataLoader same(images.data.astype(nd::float64), images.labels,
                    {.batch_size = 6, .transforms = {.mean = {3.0}, .stddev = {2.0}}});
    const auto epoch = same.begin();  // holds the epoch, and with it the batch
    const data::Batch& batch = *epoch;
    CHECK(batch.data.dtype() == nd::float64);
    const std::vector<double> got = batch.data.to_vector<double>();
    CHECK(got[0] == doctest::Approx((images.pixels[0][0] - 3.0) / 2.0));
    CHECK(got[71] == doctest::Approx((images.pixels[5][11] - 3.0) / 2.0));
  }

  TEST_CASE("crops and flips give one of the image's padded, shifted, mirrored copies") {
    const std::int64_t c = 2, h = 5, w = 4;
    const int p = 2;
    const Images images = numbered_images(40, c, h, w);
    for (Device device : {cpu(), sim(0)}) {
      INFO(to_string(device));
      DataLoader loader(
          images.data, images.labels,
          {.batch_size = 16,
           .shuffle = true,
           .seed = 3,
           .device = device,
           .transforms = {
               .random_crop = true, .crop_padding = p, .random_flip = true, .seed = 11}});
      std::vector<int> labels;
      const std::vector<std::vector<int>> got = epoch_images(loader, &labels);
      REQUIRE(got.size() == 40);
      std::set<std::tuple<std::int64_t, std::int64_t, bool>> seen;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const std::vector<int>& image = images.pixels[static_cast<std::size_t>(labels[i])];
        bool found = false;
        for (std::int64_t top = 0; top <= 2 * p && !found; ++top) {
          for (std::int64_t left = 0; left <= 2 * p && !found; ++left) {
            for (bool flip : {false, true}) {
              if (by_hand(image, c, h, w, p, top, left, flip) == got[i]) {
                seen.insert({top, left, flip});
                found = true;
                break;
              }
            }
          }
        }
        CHECK_MESSAGE(found, "image " << i << " is no crop or flip of sample " << labels[i]);
      }
      // 40 draws of 50 outcomes: many different ones, flipped and not.
      CHECK(seen.size() >= 15);
    }
  }

  TEST_CASE("crops and flips repeat with the seed and differ across seeds and epochs") {
    const Images images = numbered_images(24, 1, 6, 6);
    auto make = [&](std::uint64_t seed, Device device) {
      return DataLoader(
          images.data, images.labels,
          {.batch_size = 8,
           .device = device,
           .transforms = {
               .random_crop = true, .crop_padding = 3, .random_flip = true, .seed = seed}});
    };
    DataLoader a = make(5, cpu()), b = make(5, sim(0)), other = make(6, cpu());
    const auto first = epoch_images(a, nullptr);
    CHECK(first == epoch_images(b, nullptr));  // the same on another device
    CHECK(first != epoch_images(other, nullptr));
    CHECK(first != epoch_images(a, nullptr));  // epoch 1 draws anew
    DataLoader again = make(5, cpu());
    CHECK(first == epoch_images(again, nullptr));
    // A flip alone mirrors about half the images and leaves the rest as they are.
    DataLoader flips(images.data, images.labels,
                     {.batch_size = 24, .transforms = {.random_flip = true, .seed = 1}});
    int mirrored = 0;
    const auto flipped = epoch_images(flips, nullptr);
    for (std::size_t i = 0; i < flipped.size(); ++i) {
      if (flipped[i] == images.pixels[i]) continue;
      CHECK(flipped[i] == by_hand(images.pixels[i], 1, 6, 6, 0, 0, 0, true));
      ++mirrored;
    }
    CHECK(mirrored > 4);
    CHECK(mirrored < 20);
  }

  TEST_CASE("transforms the data cannot take are refused at construction") {
    const Images images = numbered_images(4, 3, 2, 2);
    const NDArray flat = nd::zeros({4, 12});
    auto refused = [&](const NDArray& data, Transforms t, const char* what) {
      CHECK_THROWS_WITH_AS(DataLoader(data, images.labels, {.batch_size = 2, .transforms = t}),
                           doctest::Contains(what), Error);
    };
    refused(flat, {.random_crop = true, .crop_padding = 1}, "random_crop needs images");
    refused(flat, {.random_flip = true}, "random_flip needs images");
    refused(images.data, {.random_crop = true, .crop_padding = -1}, "crop_padding is -1");
    refused(images.data, {.crop_padding = 2}, "random_crop is not");
    refused(images.data, {.mean = {0.5}}, "need a floating result");
    refused(images.data, {.dtype = nd::int32, .scale = 0.5}, "int32");
    refused(images.data, {.dtype = nd::uint8}, "dtype uint8 is refused");
    refused(images.data, {.dtype = nd::float32, .mean = {1, 2}}, "mean has 2 values");
    refused(images.data, {.dtype = nd::float32, .stddev = {1, 0, 1}}, "every value must be > 0");
    refused(images.data.astype(nd::float32), {.stddev = {1, 2, 3, 4}}, "one per channel (3");
  }
}

}  // namespace tandem::testing
