// Writes a tiny Fashion-MNIST look-alike (the four IDX files, 28x28 uint8 images and uint8
// labels) into the directory given, so that multi_device_concise runs in a test without the
// real data set: image i has class i % 10 and a bright 8x8 square whose place the class picks,
// over faint noise.
#include <tandem/tandem.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace nd = tandem::nd;

void write_split(const std::string& dir, const std::string& prefix, std::int64_t count,
                 std::uint64_t seed) {
  nd::NDArray noise = nd::random::uniform({count, 28, 28}, {.low = 0, .high = 40});
  std::vector<double> pixels = noise.to_vector<double>();
  std::vector<std::int32_t> labels(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const auto label = static_cast<std::int32_t>((i + static_cast<std::int64_t>(seed)) % 10);
    labels[static_cast<std::size_t>(i)] = label;
    const std::int64_t top = 2 + 8 * (label / 4), left = 2 + 6 * (label % 4);
    for (std::int64_t r = top; r < top + 8; ++r) {
      for (std::int64_t c = left; c < left + 8; ++c) {
        pixels[static_cast<std::size_t>((i * 28 + r) * 28 + c)] = 250;
      }
    }
  }
  for (double& p : pixels) p = static_cast<double>(static_cast<int>(p));  // whole numbers
  nd::write_idx(dir + "/" + prefix + "-images-idx3-ubyte", nd::from_vector(pixels, {count, 28, 28}),
                nd::IdxType::uint8);
  nd::write_idx(dir + "/" + prefix + "-labels-idx1-ubyte", nd::from_vector(labels),
                nd::IdxType::uint8);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_tiny_fashion_mnist DIR\n");
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  nd::random::seed(5);
  write_split(argv[1], "train", 64, 0);
  write_split(argv[1], "t10k", 32, 3);
  return 0;
}
