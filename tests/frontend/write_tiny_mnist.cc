// write_tiny_mnist DIR [TRAIN TEST]: writes a small data set in Fashion-MNIST's four files
// (gzipped, as Debian ships them) for the tests of the programs that read it: 28 x 28 uint8
// images whose class (0..9) is a bright band at rows 2c..2c+3 over random noise, so a network
// can learn it. Deterministic.
#include <tandem/tandem.h>

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "gzip_writer.h"

namespace {

void write_gzipped_idx(const std::string& path, const tandem::nd::NDArray& array) {
  const std::string plain = path + ".tmp";
  tandem::nd::write_idx(plain, array, tandem::nd::IdxType::uint8);
  std::ifstream in(plain, std::ios::binary);
  const std::vector<unsigned char> bytes{std::istreambuf_iterator<char>(in),
                                         std::istreambuf_iterator<char>()};
  const std::vector<unsigned char> gz = tandem::testing::gzip_bytes(bytes);
  std::ofstream(path + ".gz", std::ios::binary)
      .write(reinterpret_cast<const char*>(gz.data()), static_cast<std::streamsize>(gz.size()));
  std::filesystem::remove(plain);
}

void write_part(const std::string& dir, const char* images_file, const char* labels_file,
                std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> pixels, labels;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto label = static_cast<std::int32_t>(rng() % 10);
    labels.push_back(label);
    for (int y = 0; y < 28; ++y) {
      for (int x = 0; x < 28; ++x) {
        const bool band = y >= 2 * label + 4 && y < 2 * label + 8;
        pixels.push_back(static_cast<std::int32_t>((band ? 160 : 0) + rng() % 64));
      }
    }
  }
  write_gzipped_idx(dir + "/" + images_file, tandem::nd::from_vector(pixels, {n, 28, 28}));
  write_gzipped_idx(dir + "/" + labels_file, tandem::nd::from_vector(labels));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    std::fprintf(stderr, "usage: write_tiny_mnist DIR [TRAIN TEST]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::int64_t train = argc == 4 ? std::atoll(argv[2]) : 600;
  const std::int64_t test = argc == 4 ? std::atoll(argv[3]) : 200;
  std::filesystem::create_directories(dir);
  namespace data = tandem::data;
  write_part(dir, data::kMnistFiles[0], data::kMnistFiles[1], train, 1);
  write_part(dir, data::kMnistFiles[2], data::kMnistFiles[3], test, 2);
  std::printf("wrote %lld training and %lld test images to %s\n", static_cast<long long>(train),
              static_cast<long long>(test), dir.c_str());
  return 0;
}
