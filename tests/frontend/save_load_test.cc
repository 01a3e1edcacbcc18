// nd::save / nd::load: round trips of every dtype and shape, across devices, and a clear
// tandem::Error (never a crash, never wrong values) for every way a file can be bad: missing,
// truncated at any byte, any byte flipped, wrong magic, unknown version, duplicate names.
#include <cstring>
#include <string>

#include "frontend_test_util.h"
#include "scratch_dir.h"

namespace tandem::testing {
namespace {

// The message of the tandem::Error that `load` throws.
std::string load_error(const std::string& path) {
  try {
    nd::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("load('" << path << "') did not throw");
  return {};
}

nd::NamedArrays small_arrays() {
  return {{"weight", nd::array({{1.5, -2}, {3, 4.25}})},
          {"bias", nd::from_vector(std::vector<std::int64_t>{-7, 1LL << 40})},
          {"", nd::full({}, 2.5, nd::float64)}};
}

// CRC-32 one bit at a time, straight from its definition: the reference for the file's
// table-driven checksum.
std::uint32_t bitwise_crc32(const std::vector<unsigned char>& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) != 0 ? 0xEDB88320u : 0u);
  }
  return crc ^ 0xFFFFFFFFu;
}

void check_same(const NDArray& a, const NDArray& b) {
  CHECK(a.shape() == b.shape());
  CHECK(a.dtype() == b.dtype());
  CHECK(a.to_vector<double>() == b.to_vector<double>());
}

}  // namespace

TEST_SUITE("frontend.save_load") {
  TEST_CASE("the reference CRC-32 gives the standard check value") {
    CHECK(bitwise_crc32({'1', '2', '3', '4', '5', '6', '7', '8', '9'}) == 0xCBF43926u);
  }

  TEST_CASE("save then load gives back every array with its name, dtype, shape and values") {
    ScratchDir dir;
    std::mt19937_64 rng(3);
    nd::NamedArrays arrays;
    for (DType dtype : {nd::float32, nd::float64, nd::int32, nd::int64}) {
      const bool integral = dtype == nd::int32 || dtype == nd::int64;
      arrays.emplace_back(std::string("a_") + nd::dtype_name(dtype),
                          to_array(random_host({3, 4, 5}, rng, -100, 100, integral), dtype));
    }
    arrays.emplace_back("a_uint8", to_array(random_host({3, 4, 5}, rng, 0, 255, true), nd::uint8));
    arrays.emplace_back("empty", nd::zeros({0, 3}));
    arrays.emplace_back("row view", nd::arange(12).reshape({3, 4})[1]);
    arrays.emplace_back("strided view", nd::arange(12).reshape({3, 4}).T());
    const std::string path = dir.file("arrays.tnd");
    nd::save(path, arrays);
    const nd::NamedArrays loaded = nd::load(path);
    REQUIRE(loaded.size() == arrays.size());
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      CAPTURE(arrays[i].first);
      CHECK(loaded[i].first == arrays[i].first);
      check_same(loaded[i].second, arrays[i].second);
      CHECK(loaded[i].second.device() == cpu());
    }
    CHECK(nd::find(loaded, "strided view").to_vector<float>() ==
          std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  }

  TEST_CASE("float values survive bit for bit") {
    ScratchDir dir;
    const std::vector<double> values{0.1, -0.0, 1e-308, 1.7976931348623157e308, 1.0 / 3.0};
    nd::save(dir.file("f.tnd"), nd::from_vector(values));
    const std::vector<double> back = nd::load_array(dir.file("f.tnd")).to_vector<double>();
    REQUIRE(back.size() == values.size());
    CHECK(std::memcmp(back.data(), values.data(), values.size() * sizeof(double)) == 0);
  }

  TEST_CASE("arrays saved from an accelerator load onto another device") {
    ScratchDir dir;
    const std::string path = dir.file("sim.tnd");
    auto x = nd::random::uniform({17, 9}, sim(0));
    auto y = x * 2;  // still queued when save is called: save waits for it
    nd::save(path, {{"x", x}, {"y", y}});
    for (Device device : {cpu(), sim(0), sim(1)}) {
      CAPTURE(device);
      const nd::NamedArrays loaded = nd::load(path, device);
      CHECK(loaded[0].second.device() == device);
      check_same(loaded[0].second, x);
      check_same(nd::find(loaded, "y"), y);
    }
  }

  TEST_CASE("the single-array overload writes one unnamed array") {
    ScratchDir dir;
    nd::save(dir.file("one.tnd"), nd::arange(5));
    CHECK(nd::load(dir.file("one.tnd")).at(0).first.empty());
    CHECK(nd::load_array(dir.file("one.tnd")).to_vector<float>() ==
          std::vector<float>{0, 1, 2, 3, 4});
    nd::save(dir.file("two.tnd"), small_arrays());
    CHECK_THROWS_WITH_AS(nd::load_array(dir.file("two.tnd")), doctest::Contains("holds 3 arrays"),
                         Error);
  }

  TEST_CASE("saving refuses duplicate names and null arrays, and writes nothing") {
    ScratchDir dir;
    const std::string path = dir.file("bad.tnd");
    CHECK_THROWS_WITH_AS(nd::save(path, {{"w", nd::ones({2})}, {"w", nd::zeros({2})}}),
                         doctest::Contains("'w' appears twice"), Error);
    CHECK_THROWS_WITH_AS(nd::save(path, {{"w", NDArray()}}), doctest::Contains("null NDArray"),
                         Error);
    CHECK_FALSE(std::filesystem::exists(path));
  }

  TEST_CASE("saving into a directory that does not exist names the file") {
    ScratchDir dir;
    const std::string path = dir.file("no/such/dir/w.tnd");
    CHECK_THROWS_WITH_AS(nd::save(path, nd::ones({2})),
                         doctest::Contains(("cannot write '" + path + "'").c_str()), Error);
    CHECK_THROWS_WITH_AS(nd::write_idx(path, nd::ones({2}), nd::IdxType::uint8),
                         doctest::Contains(("write_idx: cannot write '" + path + "'").c_str()),
                         Error);
  }

  TEST_CASE("saving an array that carries an error rethrows it and leaves no file") {
    ScratchDir dir;
    const std::string path = dir.file("poisoned.tnd");
    auto q = nd::full({3}, 6, nd::int32) / nd::from_vector(std::vector<std::int32_t>{1, 0, 2});
    CHECK_THROWS_WITH_AS(nd::save(path, {{"q", q}}), doctest::Contains("division by zero"), Error);
    CHECK_FALSE(std::filesystem::exists(path));
  }

  TEST_CASE("load_into writes the file's values into existing arrays on any device") {
    ScratchDir dir;
    const std::string path = dir.file("params.tnd");
    nd::save(path, small_arrays());
    NDArray weight = nd::zeros({2, 2}, sim(0));
    NDArray bias = nd::zeros({2}, nd::int64);
    NDArray scalar = nd::zeros({}, nd::float64, sim(1));
    nd::load_into(path, {{"bias", bias}, {"weight", weight}, {"", scalar}});
    CHECK(weight.device() == sim(0));
    CHECK(weight.to_vector<float>() == std::vector<float>{1.5, -2, 3, 4.25});
    CHECK(bias.to_vector<std::int64_t>() == std::vector<std::int64_t>{-7, 1LL << 40});
    CHECK(scalar.scalar<double>() == 2.5);
  }

  TEST_CASE("load_into refuses mismatching shapes, dtypes and names, and changes nothing") {
    ScratchDir dir;
    const std::string path = dir.file("params.tnd");
    nd::save(path, small_arrays());
    NDArray weight = nd::zeros({2, 2});
    NDArray bias = nd::zeros({2}, nd::int64);
    NDArray scalar = nd::zeros({}, nd::float64);
    CHECK_THROWS_WITH_AS(
        nd::load_into(path,
                      {{"weight", weight}, {"bias", nd::zeros({3}, nd::int64)}, {"", scalar}}),
        doctest::Contains(
            ("array 'bias' of '" + path + "' is 2 int64, the target is 3 int64").c_str()),
        Error);
    CHECK_THROWS_WITH_AS(
        nd::load_into(path, {{"weight", weight}, {"bias", nd::zeros({2})}, {"", scalar}}),
        doctest::Contains("is 2 int64, the target is 2 float32"), Error);
    CHECK(weight.to_vector<float>() == std::vector<float>(4, 0.0f));  // checked before writing
    CHECK_THROWS_WITH_AS(nd::load_into(path, {{"weight", weight}, {"bias", bias}}),
                         doctest::Contains("has an array named '' that no target has"), Error);
    CHECK_THROWS_WITH_AS(
        nd::load_into(path, {{"weight", weight}, {"bias", bias}, {"", scalar}, {"gamma", bias}}),
        doctest::Contains("has no array named 'gamma'"), Error);
    NDArray gamma = nd::full({1}, 3.0);
    nd::load_into(path, {{"weight", weight}, {"gamma", gamma}},
                  {.allow_missing = true, .ignore_extra = true});
    CHECK(weight.to_vector<float>() == std::vector<float>{1.5, -2, 3, 4.25});
    CHECK(gamma.to_vector<float>() == std::vector<float>{3});
  }

  TEST_CASE("find names the arrays there are when the name is missing") {
    CHECK_THROWS_WITH_AS(nd::find(small_arrays(), "gamma"),
                         doctest::Contains("no array named 'gamma' (the arrays are: 'weight', "
                                           "'bias', '')"),
                         Error);
  }

  TEST_CASE("a missing file, a directory and a file of another format are clear errors") {
    ScratchDir dir;
    CHECK(load_error(dir.file("nope.tnd")).find("cannot read '" + dir.file("nope.tnd") + "'") !=
          std::string::npos);
    CHECK(load_error(dir.file("")).find("is a directory") != std::string::npos);
    write_bytes(dir.file("text.tnd"),
                {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
    CHECK(load_error(dir.file("text.tnd")).find("is not a tandem array file") != std::string::npos);
  }

  TEST_CASE("an unknown version and an unknown dtype are named") {
    ScratchDir dir;
    const std::string path = dir.file("v.tnd");
    nd::save(path, {{"w", nd::ones({2})}});
    const std::vector<unsigned char> good = read_bytes(path);
    std::vector<unsigned char> newer = good;
    newer[8] = 2;  // the version, after the 8-byte magic
    write_bytes(path, newer);
    CHECK(load_error(path).find("has format version 2; this tandem reads version 1") !=
          std::string::npos);
    std::vector<unsigned char> odd_dtype = good;
    odd_dtype[8 + 4 + 4 + 4 + 1] = 9;  // after version, count, name length and the name "w"
    write_bytes(path, odd_dtype);
    CHECK(load_error(path).find("unsupported dtype code 9 for array 0 ('w')") != std::string::npos);
  }

  TEST_CASE("a file truncated at any byte is an error naming the file") {
    ScratchDir dir;
    const std::string path = dir.file("t.tnd");
    nd::save(path, small_arrays());
    const std::vector<unsigned char> good = read_bytes(path);
    for (std::size_t size = 0; size < good.size(); ++size) {
      CAPTURE(size);
      write_bytes(path, std::vector<unsigned char>(good.begin(), good.begin() + size));
      const std::string message = load_error(path);
      CHECK(message.find("'" + path + "'") != std::string::npos);
      CHECK(message.find("truncated") != std::string::npos);
    }
    std::vector<unsigned char> longer = good;
    longer.push_back(0);
    write_bytes(path, longer);
    CHECK(load_error(path).find("1 bytes after its checksum") != std::string::npos);
  }

  TEST_CASE("any flipped byte is an error, never other values") {
    ScratchDir dir;
    const std::string path = dir.file("f.tnd");
    nd::save(path, small_arrays());
    const std::vector<unsigned char> good = read_bytes(path);
    for (std::size_t at = 0; at < good.size(); ++at) {
      for (unsigned char mask : {0x01, 0x80, 0xFF}) {
        CAPTURE(at);
        CAPTURE(static_cast<int>(mask));
        std::vector<unsigned char> bad = good;
        bad[at] ^= mask;
        write_bytes(path, bad);
        CHECK(load_error(path).find("'" + path + "'") != std::string::npos);
      }
    }
  }

  TEST_CASE("a checksum mismatch in the data says the file is corrupt") {
    ScratchDir dir;
    const std::string path = dir.file("c.tnd");
    nd::save(path, {{"w", nd::ones({4})}});
    std::vector<unsigned char> bad = read_bytes(path);
    bad[bad.size() - 6] ^= 0x10;  // inside the data, before the 4-byte checksum
    write_bytes(path, bad);
    CHECK(load_error(path).find("is corrupt: its CRC-32 is") != std::string::npos);
  }

  TEST_CASE("the file layout is the documented one") {
    ScratchDir dir;
    const std::string path = dir.file("layout.tnd");
    nd::save(path, {{"ab", nd::from_vector(std::vector<std::int32_t>{1, 258}, {2, 1})}});
    const std::vector<unsigned char> expected_head{
        'T', 'A', 'N', 'D', 'E', 'M', 'N', 'D',  // magic
        1,   0,   0,   0,                        // version
        1,   0,   0,   0,                        // count
        2,   0,   0,   0,   'a', 'b',            // name
        3,                                       // dtype: int32
        2,                                       // rank
        2,   0,   0,   0,   0,   0,   0,   0,    // dims
        1,   0,   0,   0,   0,   0,   0,   0,    //
        8,   0,   0,   0,   0,   0,   0,   0,    // byte count
        1,   0,   0,   0,   2,   1,   0,   0};   // values 1, 258
    const std::vector<unsigned char> bytes = read_bytes(path);
    REQUIRE(bytes.size() == expected_head.size() + 4);
    CHECK(std::equal(expected_head.begin(), expected_head.end(), bytes.begin()));
    const std::uint32_t stored = static_cast<std::uint32_t>(bytes[bytes.size() - 4]) |
                                 static_cast<std::uint32_t>(bytes[bytes.size() - 3]) << 8 |
                                 static_cast<std::uint32_t>(bytes[bytes.size() - 2]) << 16 |
                                 static_cast<std::uint32_t>(bytes[bytes.size() - 1]) << 24;
    CHECK(stored == bitwise_crc32(expected_head));
  }
}

}  // namespace tandem::testing
