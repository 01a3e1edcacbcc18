// read_idx / write_idx: round trips of every IDX element type, the exact bytes of a known file
// (MNIST's header layout), and a clear tandem::Error for every bad file: missing, truncated at
// any byte, a byte flipped in the header, trailing bytes, values a type cannot hold.
#include <string>

#include "frontend_test_util.h"
#include "scratch_dir.h"

namespace tandem::testing {
namespace {

std::string read_error(const std::string& path, DType dtype = nd::int32) {
  try {
    nd::read_idx(path, dtype);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("read_idx('" << path << "') did not throw");
  return {};
}

}  // namespace

TEST_SUITE("frontend.idx") {
  TEST_CASE("a uint8 file has MNIST's layout: magic 0x00000803, big-endian dims, raw bytes") {
    ScratchDir dir;
    const std::string path = dir.file("images-idx3-ubyte");
    const std::vector<std::int32_t> pixels{0, 1, 2, 127, 128, 255};
    nd::write_idx(path, nd::from_vector(pixels, {1, 2, 3}), nd::IdxType::uint8);
    const std::vector<unsigned char> expected{0, 0, 8, 3, 0, 0, 0, 1, 0,   0,   0,
                                              2, 0, 0, 0, 3, 0, 1, 2, 127, 128, 255};
    CHECK(read_bytes(path) == expected);
    const NDArray back = nd::read_idx(path);
    CHECK(back.shape() == Shape{1, 2, 3});
    CHECK(back.dtype() == nd::int32);
    CHECK(back.to_vector<std::int32_t>() == pixels);
    const NDArray as_float = nd::read_idx(path, nd::float32);
    CHECK(as_float.dtype() == nd::float32);
    CHECK(as_float.to_vector<float>() == std::vector<float>{0, 1, 2, 127, 128, 255});
  }

  TEST_CASE("every element type round-trips its range, in big-endian order") {
    ScratchDir dir;
    struct Case {
      nd::IdxType type;
      std::vector<double> values;
      DType read_as;
    };
    const std::vector<Case> cases{
        {nd::IdxType::uint8, {0, 17, 255}, nd::int32},
        {nd::IdxType::int8, {-128, -1, 0, 127}, nd::int32},
        {nd::IdxType::int16, {-32768, -2, 300, 32767}, nd::int64},
        {nd::IdxType::int32, {-2147483648.0, -5, 65536, 2147483647.0}, nd::int64},
        {nd::IdxType::float32, {-1.5, 0.25, 3e38}, nd::float32},
        {nd::IdxType::float64, {-1e300, 0.1, 1.0 / 3.0}, nd::float64},
    };
    for (const Case& c : cases) {
      CAPTURE(nd::idx_type_name(c.type));
      const std::string path = dir.file(std::string("t-") + nd::idx_type_name(c.type));
      nd::write_idx(path, nd::from_vector(c.values), c.type);
      const NDArray back = nd::read_idx(path, c.read_as);
      CHECK(back.dtype() == c.read_as);
      const std::vector<double> got = back.to_vector<double>();
      REQUIRE(got.size() == c.values.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i] == (c.read_as == nd::float32 ? static_cast<float>(c.values[i]) : c.values[i]));
      }
    }
    // int16 -2 is 0xFFFE, most significant byte first.
    const std::vector<unsigned char> int16_file = read_bytes(dir.file("t-int16"));
    CHECK(int16_file[2] == 0x0B);
    CHECK(int16_file[8 + 2] == 0xFF);
    CHECK(int16_file[8 + 3] == 0xFE);
  }

  TEST_CASE("reading onto an accelerator gives the same values") {
    ScratchDir dir;
    const std::string path = dir.file("labels-idx1-ubyte");
    nd::write_idx(path, nd::from_vector(std::vector<std::int32_t>{3, 1, 4, 1, 5}),
                  nd::IdxType::uint8);
    const NDArray on_sim = nd::read_idx(path, nd::float32, sim(0));
    CHECK(on_sim.device() == sim(0));
    CHECK(on_sim.to_vector<float>() == std::vector<float>{3, 1, 4, 1, 5});
  }

  TEST_CASE("writing refuses values the type cannot hold, and writes nothing") {
    ScratchDir dir;
    const std::string path = dir.file("bad");
    CHECK_THROWS_WITH_AS(nd::write_idx(path, nd::array({1, 256}), nd::IdxType::uint8),
                         doctest::Contains("element 1"), Error);
    CHECK_THROWS_WITH_AS(nd::write_idx(path, nd::array({0.5}), nd::IdxType::int8),
                         doctest::Contains("not a whole number"), Error);
    CHECK_THROWS_WITH_AS(nd::write_idx(path, nd::full({}, 1.0), nd::IdxType::uint8),
                         doctest::Contains("0-d"), Error);
    CHECK_FALSE(std::filesystem::exists(path));
  }

  TEST_CASE("a float file read as an integer dtype is refused") {
    ScratchDir dir;
    const std::string path = dir.file("floats");
    nd::write_idx(path, nd::array({0.5, 1.5}), nd::IdxType::float32);
    CHECK(read_error(path, nd::int32).find("holds float32 elements; read it as float32") !=
          std::string::npos);
  }

  TEST_CASE("missing, not-IDX, cut-short gzip and unknown-type files are named errors") {
    ScratchDir dir;
    CHECK(read_error(dir.file("absent")).find("cannot read '" + dir.file("absent") + "'") !=
          std::string::npos);
    write_bytes(dir.file("gz"), {0x1f, 0x8b, 8, 0, 0, 0, 0, 0});
    CHECK(read_error(dir.file("gz")).find("is a truncated gzip file") != std::string::npos);
    write_bytes(dir.file("text"), {'h', 'e', 'l', 'l', 'o'});
    CHECK(read_error(dir.file("text")).find("is not an IDX file") != std::string::npos);
    write_bytes(dir.file("type"), {0, 0, 0x0A, 1, 0, 0, 0, 1, 7});
    CHECK(read_error(dir.file("type")).find("unknown IDX element type code 10") !=
          std::string::npos);
    write_bytes(dir.file("rank0"), {0, 0, 8, 0});
    CHECK(read_error(dir.file("rank0")).find("has rank 0") != std::string::npos);
  }

  TEST_CASE("a file truncated at any byte, or longer than its header says, is an error") {
    ScratchDir dir;
    const std::string path = dir.file("t");
    nd::write_idx(path, nd::arange(24).reshape({2, 3, 4}), nd::IdxType::int16);
    const std::vector<unsigned char> good = read_bytes(path);
    for (std::size_t size = 0; size < good.size(); ++size) {
      CAPTURE(size);
      write_bytes(path, std::vector<unsigned char>(good.begin(), good.begin() + size));
      const std::string message = read_error(path);
      CHECK(message.find("'" + path + "'") != std::string::npos);
      CHECK(message.find("truncated") != std::string::npos);
    }
    std::vector<unsigned char> longer = good;
    longer.insert(longer.end(), {1, 2, 3});
    write_bytes(path, longer);
    CHECK(read_error(path).find("has 3 bytes more than its header says") != std::string::npos);
  }

  TEST_CASE("a flipped header byte is an error or a consistent other array, never a crash") {
    ScratchDir dir;
    const std::string path = dir.file("f");
    nd::write_idx(path, nd::arange(12).reshape({3, 4}), nd::IdxType::uint8);
    const std::vector<unsigned char> good = read_bytes(path);
    // IDX has no checksum: a flipped data byte is a different value. The header (magic and
    // dims) must be checked: every flip there makes the sizes disagree or the magic invalid.
    for (std::size_t at = 0; at < 12; ++at) {
      for (unsigned char mask : {0x01, 0x40, 0xFF}) {
        CAPTURE(at);
        CAPTURE(static_cast<int>(mask));
        std::vector<unsigned char> bad = good;
        bad[at] ^= mask;
        write_bytes(path, bad);
        try {
          const NDArray array = nd::read_idx(path, nd::float64);
          CHECK(array.size() == 12);  // a type change that keeps 12 one-byte elements
        } catch (const Error& e) {
          CHECK(std::string(e.what()).find("'" + path + "'") != std::string::npos);
        }
      }
    }
  }
}

}  // namespace tandem::testing
