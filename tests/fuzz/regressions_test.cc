// What the fuzzers found, each pinned to the behaviour it has now:
// - tandem_fuzz_files: inputs a reader mishandled, each with the clear tandem::Error it gives
//   now (the files are made here, byte by byte);
// - tandem_fuzz_ops: op sequences that broke a promise of the front end.
#include <doctest/doctest.h>
#include <tandem/tandem.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace nd = tandem::nd;
namespace nn = tandem::nn;
using Bytes = std::vector<unsigned char>;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "tandem-fuzz-regressions";
  fs::create_directories(dir);
  return dir / name;
}

void write(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void append(Bytes& out, std::uint64_t value, int width, bool big_endian = false) {
  for (int i = 0; i < width; ++i) {
    const int shift = 8 * (big_endian ? width - 1 - i : i);
    out.push_back(static_cast<unsigned char>(value >> shift));
  }
}

// An array file (docs/file-format.md) of one float32 array with no data and these dimensions,
// its CRC right: only the shape is wrong.
Bytes empty_array_file(const std::vector<std::uint64_t>& dims) {
  Bytes out = {'T', 'A', 'N', 'D', 'E', 'M', 'N', 'D'};
  append(out, 1, 4);  // version
  append(out, 1, 4);  // one array
  append(out, 0, 4);  // an empty name
  append(out, 1, 1);  // float32
  append(out, dims.size(), 1);
  for (const std::uint64_t dim : dims) append(out, dim, 8);
  append(out, 0, 8);  // no bytes
  append(out, crc32(crc32(0L, Z_NULL, 0), out.data(), static_cast<uInt>(out.size())), 4);
  return out;
}

constexpr std::uint64_t kHuge = std::uint64_t{1} << 62;

}  // namespace

TEST_SUITE("fuzz.regressions") {
  TEST_CASE("an array file whose empty shape multiplies past 2^63 is refused") {
    // 0 x 2^62 x 2^62 holds no element, but its strides (2^62 x 2^62) overflow int64, and
    // 2^62 x 2^62 x 0 overflows Shape::num_elements before the zero is reached.
    for (const auto& dims : {std::vector<std::uint64_t>{0, kHuge, kHuge},
                             std::vector<std::uint64_t>{kHuge, kHuge, 0}}) {
      const fs::path path = scratch("empty-huge.tnd");
      write(path, empty_array_file(dims));
      CHECK_THROWS_WITH_AS(nd::load(path.string()), doctest::Contains("too large"), tandem::Error);
    }
    // An empty array of a shape that fits still loads.
    const fs::path path = scratch("empty-fits.tnd");
    write(path, empty_array_file({0, 1u << 20, 1u << 20}));
    CHECK(nd::load_array(path.string()).size() == 0);
  }

  TEST_CASE("an IDX file whose empty shape multiplies past 2^63 is refused") {
    Bytes idx = {0, 0, 0x08, 5};
    for (const std::uint64_t dim :
         {0ull, 0xffffffffull, 0xffffffffull, 0xffffffffull, 0xffffffffull}) {
      append(idx, dim, 4, /*big_endian=*/true);
    }
    const fs::path path = scratch("empty-huge.idx");
    write(path, idx);
    CHECK_THROWS_WITH_AS(nd::read_idx(path.string()), doctest::Contains("too large"),
                         tandem::Error);
  }

  TEST_CASE("an empty uint8 IDX file reads as an empty array") {
    // read_idx passed the empty vector's null buffer to memcpy (UBSan: null pointer passed as
    // argument 1); the asan stage fails on it.
    Bytes idx = {0, 0, 0x08, 2};
    append(idx, 0, 4, /*big_endian=*/true);
    append(idx, 28, 4, /*big_endian=*/true);
    const fs::path path = scratch("empty.idx");
    write(path, idx);
    const nd::NDArray empty = nd::read_idx(path.string(), nd::uint8);
    CHECK(empty.shape() == nd::Shape{0, 28});
    CHECK(empty.size() == 0);
  }

  TEST_CASE("a graph whose input shape has a negative or overflowing dimension is refused") {
    nn::Sequential net;
    net.add(nn::Dense(2));
    net.initialize(nn::Xavier());
    const nd::NDArray example = nd::zeros({1, 4});
    const nn::ExportedFiles files = nn::export_block(net, example, scratch("shape").string());
    const std::string graph = read_text(files.graph);
    const std::string input_shape = "\"shape\": [\n   1,\n   4\n  ]";
    const std::size_t at = graph.find(input_shape);
    REQUIRE(at != std::string::npos);
    for (const char* shape :
         {"\"shape\": [-1, 4]", "\"shape\": [0, 4611686018427387904, 4611686018427387904]"}) {
      std::string edited = graph;
      edited.replace(at, input_shape.size(), shape);
      const fs::path path = scratch("edited-graph.json");
      write(path, Bytes(edited.begin(), edited.end()));
      CHECK_THROWS_WITH_AS(nn::ImportedBlock::load(path.string(), files.params),
                           doctest::Contains("the input"), tandem::Error);
    }
  }

  TEST_CASE("an in-place scalar op on a uint8 array throws at the call") {
    // tandem_fuzz_ops: `x += 1e30` on a uint8 array was accepted at the call and failed in the
    // kernel ("a compute kernel was given a uint8 array"), at the next sync point, while
    // `x + 1e30` and `x += y` throw at the call, as the header promises for dtype mistakes.
    nd::NDArray bytes = nd::zeros({2, 3}).astype(nd::uint8);
    CHECK_THROWS_WITH_AS(bytes += 1e30, doctest::Contains("add is not defined for uint8"),
                         tandem::Error);
    CHECK_THROWS_WITH_AS(bytes -= 1, doctest::Contains("subtract is not defined for uint8"),
                         tandem::Error);
    CHECK_THROWS_WITH_AS(bytes *= 2, doctest::Contains("multiply is not defined for uint8"),
                         tandem::Error);
    CHECK_THROWS_WITH_AS(bytes /= 2, doctest::Contains("divide is not defined for uint8"),
                         tandem::Error);
    // Nothing was queued: the array reads back as it was.
    CHECK(bytes.to_vector<int>() == std::vector<int>(6, 0));
  }

  TEST_CASE("where on a uint8 array or condition throws at the call") {
    // tandem_fuzz_ops: nd::where(c, bytes, 0.5) and a uint8 condition were accepted at the
    // call; the kernel (cpu and sim alike) refused the uint8 array when the op ran, so the error
    // came at the next sync point on the result.
    const nd::NDArray bytes = nd::ones({2, 3}).astype(nd::uint8);
    const nd::NDArray values = nd::ones({2, 3});
    for (const tandem::Device device : {tandem::cpu(), tandem::sim(0)}) {
      if (device.kind == tandem::DeviceKind::sim &&
          tandem::device_count(tandem::DeviceKind::sim) == 0) {
        continue;
      }
      const nd::NDArray b = bytes.copyto(device), v = values.copyto(device);
      CHECK_THROWS_WITH_AS(nd::where(v, b, 0.5),
                           doctest::Contains("where is not defined for uint8"), tandem::Error);
      CHECK_THROWS_WITH_AS(nd::where(v, b, b), doctest::Contains("where is not defined for uint8"),
                           tandem::Error);
      CHECK_THROWS_WITH_AS(nd::where(b, v, v), doctest::Contains("where is not defined for uint8"),
                           tandem::Error);
      CHECK(nd::where(v, v, 0.5).to_vector<float>() == std::vector<float>(6, 1.0f));
    }
  }
}
