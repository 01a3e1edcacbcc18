// tandem_fuzz_files: a deterministic random-mutation fuzzer over tandem's file readers.
//
//   tandem_fuzz_files [--seed N] [--seconds S] [--iterations K] [--only I] [--target NAME]
//                     [--corpus DIR] [--write-corpus DIR] [--show-features] [--show-errors]
//                     [--keep]
//
// At start it writes small valid files (the seeds) with tandem's own writers: an array file
// (nd::save), a network's parameters (save_parameters), an exported graph and its params
// (nn::export_block), IDX files (write_idx, plain and gzipped) and an MNIST directory. It then
// replays the corpus (default tests/fuzz/corpus/files: inputs that reached the readers' error
// paths, one per file, named after their reader). Each later iteration picks a reader, mutates
// its seed or one of its corpus entries (bit flips, interesting bytes and integers, cuts,
// duplications, splices, JSON-aware edits; the array file's CRC is recomputed half the time so
// the parser behind it is reached) and reads the result. The property: every input gives a
// value or a tandem::Error whose message starts with "tandem:", never
//   - another exception, a crash or a sanitizer report,
//   - a call longer than the watchdog's limit (TANDEM_FUZZ_CALL_LIMIT_S, default 20 s),
//   - one allocation larger than the input justifies (operator new is replaced below: more than
//     16 MiB + 2048 x the input's size fails; 2048 covers deflate's 1032:1 ratio).
//
// Iteration I < the corpus' size is entry I; a later one is a function of (N, I, the corpus)
// alone, so a failure is reproduced with `--seed N --only I` (printed with the failure). The
// time budget is --seconds, else TANDEM_FUZZ_SECONDS, else 10; --iterations K stops after K
// iterations instead. `--write-corpus DIR` writes to DIR, minimised (chunks cut out while the
// result stays the same), each input whose result (a value, or the error message with its
// numbers left out) no earlier input gave for its reader.
#include <tandem/tandem.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../frontend/gzip_writer.h"
#include "corpus.h"
#include "fuzz_options.h"
#include "fuzz_watchdog.h"

#ifndef TANDEM_FUZZ_FILES_CORPUS
#define TANDEM_FUZZ_FILES_CORPUS ""
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#include <sanitizer/common_interface_defs.h>
#define TANDEM_FUZZ_SANITIZED 1
#endif

namespace {

// ---- the allocation cap ----------------------------------------------------------------------

std::atomic<std::size_t> g_allocation_cap{SIZE_MAX};
std::atomic<bool> g_reported{false};
// What is running, for reports from operator new and the watchdog (set before each call).
char g_case[512] = "setting up";

[[noreturn]] void report_and_abort(const char* problem, std::size_t value) {
  if (!g_reported.exchange(true)) {
    std::fprintf(stderr, "fuzz_files: FAILURE: %s (%zu) in %s\n", problem, value, g_case);
  }
  std::abort();
}

void check_allocation(std::size_t bytes) {
  if (bytes > g_allocation_cap.load(std::memory_order_relaxed)) {
    report_and_abort("an allocation larger than the input justifies, bytes", bytes);
  }
}

void* allocate(std::size_t bytes, std::size_t alignment) {
  check_allocation(bytes);
  if (bytes == 0) bytes = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(bytes);
  return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
}

void* allocate_or_throw(std::size_t bytes, std::size_t alignment) {
  void* p = allocate(bytes, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) {
  return allocate_or_throw(n, 0);
}
void* operator new[](std::size_t n) {
  return allocate_or_throw(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace {

namespace fs = std::filesystem;
namespace nd = tandem::nd;
namespace nn = tandem::nn;
using Bytes = std::vector<unsigned char>;
using Rng = std::mt19937_64;

constexpr std::size_t kMaxInput = 256 * 1024;

// ---- the watchdog ----------------------------------------------------------------------------

std::atomic<std::int64_t> g_call_started_ms{0};  // 0: no call under way

using tandem::fuzz::now_ms;

void watch(std::int64_t limit_ms, const std::atomic<bool>& done) {
  tandem::fuzz::watch_inputs(limit_ms, g_call_started_ms, done, [](std::int64_t limit) {
    report_and_abort("a call ran past the watchdog's limit, ms", static_cast<std::size_t>(limit));
  });
}

// ---- files -----------------------------------------------------------------------------------

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

nn::Sequential small_network() {
  nn::Sequential net;
  net.add(nn::Dense(3, nn::relu)).add(nn::Dense(2));
  return net;
}

struct Seeds {
  fs::path dir;
  Bytes array_file, params_file, graph_json, graph_params, idx_images, idx_labels;
  Bytes idx_float, idx_int16;
};

Seeds write_seeds(const fs::path& dir) {
  Seeds seeds;
  seeds.dir = dir;
  nd::save(
      (dir / "arrays.tnd").string(),
      nd::NamedArrays{{"weights", nd::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3})},
                      {"step", nd::from_vector(std::vector<std::int64_t>{7}, {1})},
                      {"bytes", nd::from_vector(std::vector<std::uint8_t>{1, 2, 3, 4}, {2, 2})}});
  seeds.array_file = read_bytes(dir / "arrays.tnd");

  nn::Sequential net = small_network();
  net.initialize(nn::Xavier());
  const nd::NDArray example = nd::from_vector(std::vector<float>{0.5f, -1, 2, 0.25f}, {1, 4});
  net(example);
  net.save_parameters((dir / "net.params").string());
  seeds.params_file = read_bytes(dir / "net.params");
  const nn::ExportedFiles files = nn::export_block(net, example, (dir / "net").string());
  seeds.graph_json = read_bytes(files.graph);
  seeds.graph_params = read_bytes(files.params);

  nd::write_idx((dir / "images.idx").string(),
                nd::from_vector(std::vector<std::uint8_t>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90,
                                                          100, 110, 120, 130, 140, 150, 160, 170},
                                {2, 3, 3}),
                nd::IdxType::uint8);
  seeds.idx_images = read_bytes(dir / "images.idx");
  nd::write_idx((dir / "labels.idx").string(),
                nd::from_vector(std::vector<std::uint8_t>{3, 7}, {2}), nd::IdxType::uint8);
  seeds.idx_labels = read_bytes(dir / "labels.idx");
  nd::write_idx((dir / "float.idx").string(),
                nd::from_vector(std::vector<float>{1.5f, -2, 3, 4}, {2, 2}), nd::IdxType::float32);
  seeds.idx_float = read_bytes(dir / "float.idx");
  nd::write_idx((dir / "int16.idx").string(),
                nd::from_vector(std::vector<std::int32_t>{-300, 2, 3}, {3}), nd::IdxType::int16);
  seeds.idx_int16 = read_bytes(dir / "int16.idx");
  return seeds;
}

// ---- mutations -------------------------------------------------------------------------------

std::size_t below(Rng& rng, std::size_t n) {
  return n == 0 ? 0 : static_cast<std::size_t>(rng() % n);
}

const std::uint64_t kInterestingIntegers[] = {0,
                                              1,
                                              2,
                                              8,
                                              0x7f,
                                              0x80,
                                              0xff,
                                              0x7fff,
                                              0xffff,
                                              0x7fffffffull,
                                              0x80000000ull,
                                              0xffffffffull,
                                              0x100000000ull,
                                              1ull << 40,
                                              1ull << 62,
                                              0x7fffffffffffffffull,
                                              0x8000000000000000ull,
                                              0xffffffffffffffffull};

void put_integer(Bytes& bytes, std::size_t at, std::uint64_t value, int width, bool big_endian) {
  for (int i = 0; i < width && at + static_cast<std::size_t>(i) < bytes.size(); ++i) {
    const int shift = 8 * (big_endian ? width - 1 - i : i);
    bytes[at + static_cast<std::size_t>(i)] = static_cast<unsigned char>(value >> shift);
  }
}

void mutate_bytes(Bytes& bytes, const Bytes& other, Rng& rng) {
  const unsigned char kInterestingBytes[] = {0, 1, 0x7f, 0x80, 0xff, 0x0e, 0x08};
  switch (below(rng, 8)) {
    case 0:  // a bit flip
      if (!bytes.empty())
        bytes[below(rng, bytes.size())] ^= static_cast<unsigned char>(1u << below(rng, 8));
      break;
    case 1:  // an interesting byte
      if (!bytes.empty())
        bytes[below(rng, bytes.size())] =
            kInterestingBytes[below(rng, std::size(kInterestingBytes))];
      break;
    case 2: {  // an interesting integer, 4 or 8 bytes, either byte order
      if (bytes.empty()) break;
      const std::uint64_t value = kInterestingIntegers[below(rng, std::size(kInterestingIntegers))];
      put_integer(bytes, below(rng, bytes.size()), value, below(rng, 2) == 0 ? 4 : 8,
                  below(rng, 2) == 0);
      break;
    }
    case 3:  // a cut
      bytes.resize(below(rng, bytes.size() + 1));
      break;
    case 4: {  // a duplicated chunk
      if (bytes.empty()) break;
      const std::size_t from = below(rng, bytes.size());
      const std::size_t length = 1 + below(rng, std::min<std::size_t>(bytes.size() - from, 64));
      const Bytes chunk(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                        bytes.begin() + static_cast<std::ptrdiff_t>(from + length));
      bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(below(rng, bytes.size() + 1)),
                   chunk.begin(), chunk.end());
      break;
    }
    case 5: {  // a deleted chunk
      if (bytes.empty()) break;
      const std::size_t from = below(rng, bytes.size());
      const std::size_t length = 1 + below(rng, std::min<std::size_t>(bytes.size() - from, 64));
      bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(from),
                  bytes.begin() + static_cast<std::ptrdiff_t>(from + length));
      break;
    }
    case 6: {  // a splice: this file's start, the other's end
      const std::size_t cut = below(rng, bytes.size() + 1);
      const std::size_t other_cut = below(rng, other.size() + 1);
      bytes.resize(cut);
      bytes.insert(bytes.end(), other.begin() + static_cast<std::ptrdiff_t>(other_cut),
                   other.end());
      break;
    }
    default:  // random bytes inserted
      for (std::size_t n = 1 + below(rng, 16), at = below(rng, bytes.size() + 1); n > 0; --n) {
        bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                     static_cast<unsigned char>(rng()));
      }
  }
  if (bytes.size() > kMaxInput) bytes.resize(kMaxInput);
}

// Positions of tokens in JSON text: numbers, strings, and '[' / '{'.
std::vector<std::pair<std::size_t, std::size_t>> json_tokens(const std::string& text,
                                                             bool numbers) {
  std::vector<std::pair<std::size_t, std::size_t>> tokens;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '"') {
      std::size_t end = i + 1;
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      if (!numbers) tokens.emplace_back(i, std::min(end + 1, text.size()) - i);
      i = end + 1;
    } else if (text[i] == '-' || (text[i] >= '0' && text[i] <= '9')) {
      std::size_t end = i + 1;
      while (end < text.size() && std::strchr("0123456789.eE+-", text[end]) != nullptr) ++end;
      if (numbers) tokens.emplace_back(i, end - i);
      i = end;
    } else {
      ++i;
    }
  }
  return tokens;
}

void mutate_json(Bytes& bytes, Rng& rng) {
  std::string text(bytes.begin(), bytes.end());
  const char* kValues[] = {"4294967296",
                           "-1",
                           "9223372036854775807",
                           "18446744073709551615",
                           "-9223372036854775808",
                           "99999999999999999999999",
                           "1e308",
                           "-0",
                           "2147483648",
                           "0.5",
                           "\"x\"",
                           "null",
                           "[]",
                           "{}",
                           "true",
                           "[1,2]",
                           "[4294967296,1]",
                           "[-1]",
                           "[0,4611686018427387904,4611686018427387904]",
                           "[\"float32\"]",
                           "{\"a\":[]}"};
  const char* kStrings[] = {"\"\"",      "\"float64\"",  "\"int32\"", "\"uint8\"", "\"write\"",
                            "\"null\"",  "\"reshape\"",  "\"dense\"", "\"relu\"",  "\"transpose\"",
                            "\"add\"",   "\"0.weight\"", "\"inf\"",   "\"nan\"",   "\"id\"",
                            "\"shape\"", "\"inputs\"",   "1",         "[]"};
  constexpr std::size_t kKeyStrings = std::size(kStrings) - 2;
  switch (below(rng, 5)) {
    case 0: {  // a number replaced
      const auto tokens = json_tokens(text, true);
      if (tokens.empty()) break;
      const auto [at, length] = tokens[below(rng, tokens.size())];
      text.replace(at, length, kValues[below(rng, std::size(kValues))]);
      break;
    }
    case 1: {  // a string replaced
      const auto tokens = json_tokens(text, false);
      if (tokens.empty()) break;
      const auto [at, length] = tokens[below(rng, tokens.size())];
      const bool key = at + length < text.size() && text[at + length] == ':';
      // A key stays a string (the first kKeyStrings entries): else the text is not JSON at all.
      text.replace(at, length, kStrings[below(rng, key ? kKeyStrings : std::size(kStrings))]);
      break;
    }
    case 2: {  // a value nested deeper: "[" x n before a '[' or '{', "]" x n after its value
      std::vector<std::size_t> opens;
      for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '[' || text[i] == '{') opens.push_back(i);
      }
      if (opens.empty()) break;
      const std::size_t at = opens[below(rng, opens.size())];
      int depth = 0;
      std::size_t end = at;
      for (; end < text.size(); ++end) {
        if (text[end] == '[' || text[end] == '{') ++depth;
        if ((text[end] == ']' || text[end] == '}') && --depth == 0) break;
      }
      if (end >= text.size()) break;
      const std::size_t n = 1 + below(rng, below(rng, 2) == 0 ? 8 : 80);
      text.insert(end + 1, std::string(n, ']'));
      text.insert(at, std::string(n, '['));
      break;
    }
    case 3: {  // an object or list element duplicated (a node twice, an id defined twice)
      const std::size_t at = text.find('{', below(rng, text.size()));
      if (at == std::string::npos) break;
      int depth = 0;
      std::size_t end = at;
      for (; end < text.size(); ++end) {
        if (text[end] == '{') ++depth;
        if (text[end] == '}' && --depth == 0) break;
      }
      // Only a list's element: after a key, a second object would not be JSON.
      const std::size_t before = at == 0 ? std::string::npos : text.find_last_not_of(" \n", at - 1);
      if (end >= text.size() || before == std::string::npos || text[before] == ':') break;
      text.insert(end + 1, "," + text.substr(at, end + 1 - at));
      break;
    }
    default:  // a field removed: a "key": value up to the next comma
      const auto tokens = json_tokens(text, false);
      if (tokens.empty()) break;
      const auto [at, length] = tokens[below(rng, tokens.size())];
      const std::size_t comma = text.find(',', at + length);
      // Only a scalar's field: a list or object holds commas of its own.
      if (comma != std::string::npos && text[at + length] == ':' &&
          text.find_first_of("[{", at) > comma) {
        text.erase(at, comma + 1 - at);
      }
  }
  bytes.assign(text.begin(), text.end());
  if (bytes.size() > kMaxInput) bytes.resize(kMaxInput);
}

void mutate(Bytes& bytes, const Bytes& other, Rng& rng, bool json) {
  for (std::size_t n = 1 + below(rng, 4); n > 0; --n) {
    if (json && below(rng, 16) != 0) {
      mutate_json(bytes, rng);
    } else {
      mutate_bytes(bytes, other, rng);
    }
  }
}

// The array file's trailing CRC-32 recomputed, so a mutation reaches what the parser does after
// the checksum would have refused it.
void fix_crc(Bytes& bytes) {
  if (bytes.size() < 4) return;
  const std::size_t checked = bytes.size() - 4;
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(checked));
  put_integer(bytes, checked, crc, 4, false);
}

// Headers made from scratch with extreme shapes: a rank of 0 to 9 dimensions drawn from
// {0, 1, 2, 3, 2^31, 2^32 - 1, 2^32, 2^62, 2^63 - 1, 2^64 - 1}, then (array files) a byte count
// that matches the shape modulo 2^64, is 0, or is random, then a few data bytes. Byte mutations
// rarely line up a whole shape; these reach the readers' shape arithmetic directly.
std::uint64_t extreme_dimension(Rng& rng, bool idx) {
  const std::uint64_t dims[] = {0,
                                1,
                                2,
                                3,
                                0x80000000ull,
                                0xffffffffull,
                                0x100000000ull,
                                1ull << 62,
                                0x7fffffffffffffffull,
                                0xffffffffffffffffull};
  return dims[below(rng, idx ? 6 : std::size(dims))];
}

Bytes extreme_array_file(Rng& rng) {
  Bytes out = {'T', 'A', 'N', 'D', 'E', 'M', 'N', 'D', 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 'x'};
  out.push_back(static_cast<unsigned char>(1 + below(rng, 5)));  // dtype
  const std::size_t rank = below(rng, 10);
  out.push_back(static_cast<unsigned char>(rank));
  std::uint64_t product = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::uint64_t dim = extreme_dimension(rng, false);
    product *= dim;
    out.resize(out.size() + 8);
    put_integer(out, out.size() - 8, dim, 8, false);
  }
  const std::uint64_t byte_counts[] = {product * 4, 0, rng()};
  out.resize(out.size() + 8);
  put_integer(out, out.size() - 8, byte_counts[below(rng, 3)], 8, false);
  for (std::size_t n = below(rng, 64); n > 0; --n) out.push_back(static_cast<unsigned char>(rng()));
  out.resize(out.size() + 4);
  fix_crc(out);
  return out;
}

Bytes extreme_idx_file(Rng& rng) {
  const unsigned char types[] = {0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E};
  const std::size_t rank = below(rng, 10);
  Bytes out = {0, 0, types[below(rng, std::size(types))], static_cast<unsigned char>(rank)};
  for (std::size_t i = 0; i < rank; ++i) {
    out.resize(out.size() + 4);
    put_integer(out, out.size() - 4, extreme_dimension(rng, true), 4, true);
  }
  for (std::size_t n = below(rng, 64); n > 0; --n) out.push_back(static_cast<unsigned char>(rng()));
  return out;
}

// ---- the readers -----------------------------------------------------------------------------

// One input of a reader: an option (which call, which dtype) and the bytes of its files. In the
// corpus it is stored as the option byte, then each file as a 4-byte little-endian length and
// its bytes.
struct Input {
  std::uint8_t option = 0;
  std::vector<Bytes> files;
  std::size_t size() const {
    std::size_t n = 0;
    for (const Bytes& f : files) n += f.size();
    return n;
  }
};

Bytes serialize(const Input& input) {
  Bytes out{input.option};
  for (const Bytes& f : input.files) {
    out.resize(out.size() + 4);
    put_integer(out, out.size() - 4, f.size(), 4, false);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

// The inverse of serialize; a truncated entry gives what it holds.
Input deserialize(const Bytes& bytes) {
  Input input;
  if (bytes.empty()) return input;
  input.option = bytes[0];
  for (std::size_t at = 1; at + 4 <= bytes.size();) {
    std::size_t n = 0;
    for (int i = 0; i < 4; ++i)
      n |= std::size_t{bytes[at + static_cast<std::size_t>(i)]} << (8 * i);
    at += 4;
    n = std::min(n, bytes.size() - at);
    input.files.emplace_back(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                             bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return input;
}

const Bytes& file_or(const Input* base, std::size_t i, const Bytes& fallback) {
  return base != nullptr && i < base->files.size() ? base->files[i] : fallback;
}

struct Target {
  const char* name;
  const char* corpus_name;  // the prefix of its corpus entries' file names
  std::size_t files;        // how many files an input of it has
  // A new input: the seed's files (or a corpus entry's, `base`) mutated.
  std::function<Input(const Seeds&, const Input* base, Rng&)> generate;
  // Writes the input's files into `work`, calls `start` (which arms the allocation cap and the
  // watchdog), then reads them.
  std::function<void(const Input&, const fs::path& work, const std::function<void()>& start)> read;
};

// Sets the allocation cap for an input of `size` bytes and starts the watchdog's clock.
void arm(std::size_t size) {
  g_allocation_cap.store((16u << 20) + 2048 * size);
  g_call_started_ms.store(now_ms());
}
void disarm() {
  g_call_started_ms.store(0);
  g_allocation_cap.store(SIZE_MAX);
}

// A zero input of the graph's shape when it is small (a mutated shape may ask for anything).
bool small_input_shape(const nd::Shape& shape) {
  std::int64_t elements = 1;
  for (int i = 0; i < shape.ndim(); ++i) {
    if (shape[i] < 0 || shape[i] > 4096) return false;
    elements *= std::max<std::int64_t>(shape[i], 1);
    if (elements > 4096) return false;
  }
  return true;
}

Bytes mutated(const Bytes& seed, const Bytes& other, Rng& rng, bool json) {
  Bytes bytes = seed;
  mutate(bytes, other, rng, json);
  return bytes;
}

const Bytes& file_of(const Input& input, std::size_t i) {
  static const Bytes kNone;
  return i < input.files.size() ? input.files[i] : kNone;
}

std::vector<Target> targets() {
  std::vector<Target> all;
  all.push_back({"load", "load", 1,
                 [](const Seeds& s, const Input* base, Rng& rng) {
                   Bytes bytes = below(rng, 4) == 0 ? extreme_array_file(rng)
                                                    : mutated(file_or(base, 0, s.array_file),
                                                              s.params_file, rng, false);
                   if (below(rng, 2) == 0) fix_crc(bytes);
                   return Input{static_cast<std::uint8_t>(below(rng, 2)), {bytes}};
                 },
                 [](const Input& in, const fs::path& work, const std::function<void()>& start) {
                   write_bytes(work / "a.tnd", file_of(in, 0));
                   start();
                   if (in.option % 2 == 0) {
                     for (const auto& [name, array] : nd::load((work / "a.tnd").string())) {
                       array.wait_to_read();
                     }
                   } else {
                     nd::load_array((work / "a.tnd").string()).wait_to_read();
                   }
                 }});
  all.push_back({"load_parameters", "load_parameters", 1,
                 [](const Seeds& s, const Input* base, Rng& rng) {
                   Bytes bytes = mutated(file_or(base, 0, s.params_file), s.array_file, rng, false);
                   if (below(rng, 2) == 0) fix_crc(bytes);
                   return Input{0, {bytes}};
                 },
                 [](const Input& in, const fs::path& work, const std::function<void()>& start) {
                   write_bytes(work / "p.params", file_of(in, 0));
                   nn::Sequential net = small_network();
                   start();
                   net.load_parameters((work / "p.params").string());
                   net(nd::zeros({1, 4})).wait_to_read();
                 }});
  all.push_back({"ImportedBlock::load", "import", 2,
                 [](const Seeds& s, const Input* base, Rng& rng) {
                   Bytes graph = file_or(base, 0, s.graph_json),
                         params = file_or(base, 1, s.graph_params);
                   const std::size_t which = below(rng, 4);
                   if (which != 0) mutate(graph, s.graph_json, rng, which != 1);
                   if (which == 0 || which == 3) {
                     mutate(params, s.array_file, rng, false);
                     if (below(rng, 2) == 0) fix_crc(params);
                   }
                   return Input{0, {graph, params}};
                 },
                 [](const Input& in, const fs::path& work, const std::function<void()>& start) {
                   write_bytes(work / "g.json", file_of(in, 0));
                   write_bytes(work / "g.tnd", file_of(in, 1));
                   start();
                   auto block = nn::ImportedBlock::load((work / "g.json").string(),
                                                        (work / "g.tnd").string());
                   if (small_input_shape(block->input_shape())) {
                     (*block)(nd::zeros(block->input_shape(), block->input_dtype())).wait_to_read();
                   }
                 }});
  all.push_back(
      {"read_idx", "read_idx", 1,
       [](const Seeds& s, const Input* base, Rng& rng) {
         const Bytes* seeds[] = {&s.idx_images, &s.idx_labels, &s.idx_float, &s.idx_int16};
         Bytes bytes = below(rng, 4) == 0 ? extreme_idx_file(rng)
                                          : mutated(file_or(base, 0, *seeds[below(rng, 4)]),
                                                    *seeds[below(rng, 4)], rng, false);
         if (below(rng, 3) == 0) bytes = tandem::testing::gzip_bytes(bytes);
         if (below(rng, 4) == 0) mutate(bytes, s.idx_images, rng, false);
         return Input{static_cast<std::uint8_t>(below(rng, 5)), {bytes}};
       },
       [](const Input& in, const fs::path& work, const std::function<void()>& start) {
         write_bytes(work / "x.idx", file_of(in, 0));
         const nd::DType dtypes[] = {nd::uint8, nd::int32, nd::float32, nd::float64, nd::int64};
         start();
         nd::read_idx((work / "x.idx").string(), dtypes[in.option % std::size(dtypes)])
             .wait_to_read();
       }});
  all.push_back({"load_mnist", "load_mnist", 4,
                 [](const Seeds& s, const Input* base, Rng& rng) {
                   Input input;
                   const std::size_t victim = below(rng, 4);
                   for (std::size_t i = 0; i < 4; ++i) {
                     const Bytes& plain_seed = i % 2 == 0 ? s.idx_images : s.idx_labels;
                     if (base != nullptr && i < base->files.size() && i != victim) {
                       input.files.push_back(base->files[i]);
                       continue;
                     }
                     Bytes plain = plain_seed;
                     const bool mutate_plain = below(rng, 2) == 0;
                     if (i == victim && mutate_plain) mutate(plain, s.idx_labels, rng, false);
                     Bytes gz = i == victim && base != nullptr && i < base->files.size()
                                    ? base->files[i]
                                    : tandem::testing::gzip_bytes(plain);
                     if (i == victim && !mutate_plain) mutate(gz, s.idx_images, rng, false);
                     input.files.push_back(gz);
                   }
                   return input;
                 },
                 [](const Input& in, const fs::path& work, const std::function<void()>& start) {
                   const fs::path dir = work / "mnist";
                   fs::create_directories(dir);
                   for (std::size_t i = 0; i < 4; ++i) {
                     write_bytes(dir / (std::string(tandem::data::kMnistFiles[i]) + ".gz"),
                                 file_of(in, i));
                   }
                   start();
                   tandem::data::MnistDataSet set = tandem::data::load_mnist(dir.string());
                   set.train.images.wait_to_read();
                 }});
  return all;
}

struct Options : tandem::fuzz::FuzzRunOptions {
  std::string target;
  bool show_errors = false;
  bool keep = false;  // keep the working directory (the last input's files) and print its path
};

Options parse_options(int argc, char** argv) {
  Options options;
  options.call_limit_ms = 20000;
  options.corpus = TANDEM_FUZZ_FILES_CORPUS;
  tandem::fuzz::parse_fuzz_options(
      argc, argv, "fuzz_files",
      "--seed N --seconds S --iterations K --only I --target NAME --corpus DIR --write-corpus "
      "DIR --show-features --show-errors --keep",
      options,
      {{{"--show-errors", &options.show_errors}, {"--keep", &options.keep}},
       {{"--target", &options.target}}});
  return options;
}

// A corpus entry, parsed: its target and input.
struct Entry {
  std::string name;
  const Target* target;
  Input input;
};

std::vector<Entry> corpus_entries(const std::string& dir,
                                  const std::vector<const Target*>& chosen) {
  std::vector<Entry> entries;
  for (const auto& entry : tandem::fuzz::read_corpus(dir)) {
    const std::string prefix = entry.name.substr(0, entry.name.rfind('-'));
    for (const Target* target : chosen) {
      if (prefix == target->corpus_name) {
        entries.push_back({entry.name, target, deserialize(entry.bytes)});
      }
    }
  }
  return entries;
}

// What reading an input gave: "" (a value) or the tandem::Error's message; `failure` is set
// when it was anything else.
struct Result {
  std::string error;
  std::string failure;
};

Result read_input(const Target& target, const Input& input, const fs::path& work) {
  try {
    target.read(input, work, [&] { arm(input.size()); });
    disarm();
    return {};
  } catch (const tandem::Error& e) {
    disarm();
    if (std::strncmp(e.what(), "tandem", 6) != 0) {
      return {e.what(), std::string("an unclear error \"") + e.what() + "\""};
    }
    return {e.what(), ""};
  } catch (const std::exception& e) {
    disarm();
    return {e.what(), std::string("not a tandem::Error but \"") + e.what() + "\""};
  }
}

std::string feature_of(const Target& target, const Result& result, const fs::path& work) {
  return std::string(target.name) + ": " +
         (result.error.empty() ? "a value"
                               : tandem::fuzz::message_kind(result.error, work.string()));
}

// The text without the whitespace outside its strings (a pretty-printed graph shrinks by half).
Bytes compact_json(const Bytes& text) {
  Bytes out;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = text[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < text.size()) out.push_back(text[++i]);
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
      out.push_back(c);
    } else if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      out.push_back(c);
    }
  }
  return out;
}

// Compacts JSON and cuts chunks out of the input's files while it still gives `wanted` (at
// most 400 tries).
Input minimise(const Target& target, Input input, const std::string& wanted, const fs::path& work) {
  const auto still_gives_wanted = [&](const Input& candidate) {
    const Result result = read_input(target, candidate, work);
    return result.failure.empty() && feature_of(target, result, work) == wanted;
  };
  for (Bytes& file : input.files) {
    const Bytes before = file;
    file = compact_json(file);
    if (file.size() == before.size() || !still_gives_wanted(input)) file = before;
  }
  int tries = 400;
  for (Bytes& file : input.files) {
    for (std::size_t chunk = std::max<std::size_t>(file.size() / 2, 1); chunk >= 1 && tries > 0;
         chunk /= 2) {
      for (std::size_t at = 0; at < file.size() && tries > 0; --tries) {
        const Bytes before = file;
        file.erase(file.begin() + static_cast<std::ptrdiff_t>(at),
                   file.begin() + static_cast<std::ptrdiff_t>(std::min(at + chunk, file.size())));
        if (!still_gives_wanted(input)) {
          file = before;
          at += chunk;
        }
      }
      if (chunk == 1) break;
    }
  }
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
#ifdef TANDEM_FUZZ_SANITIZED
  // A sanitizer's report ends the process without our report: name the case to reproduce.
  __sanitizer_set_death_callback(
      [] { std::fprintf(stderr, "fuzz_files: FAILURE: a sanitizer report in %s\n", g_case); });
#endif
  const std::vector<Target> all = targets();
  std::vector<const Target*> chosen;
  for (const Target& target : all) {
    if (options.target.empty() || options.target == target.name) chosen.push_back(&target);
  }
  if (chosen.empty()) {
    std::fprintf(stderr, "fuzz_files: no target named %s\n", options.target.c_str());
    return 2;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/tandem-fuzz-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror("fuzz_files: mkdtemp");
    return 2;
  }
  const fs::path work = pattern;
  const Seeds seeds = write_seeds(work);
  const std::vector<Entry> corpus = corpus_entries(options.corpus, chosen);
  std::atomic<bool> done{false};
  std::thread watchdog(watch, options.call_limit_ms, std::cref(done));

  tandem::fuzz::print_run("fuzz_files", options, corpus.size());
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> outcomes;  // name: values, errors
  tandem::fuzz::FeatureSet features;
  std::size_t written = 0;
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<std::int64_t>(options.seconds * 1000));
  std::int64_t iteration = options.only >= 0 ? options.only : 0;
  int status = 0;
  for (;; ++iteration) {
    const bool replaying = static_cast<std::size_t>(iteration) < corpus.size();
    if (options.only >= 0 && iteration > options.only) break;
    if (options.only < 0 && options.iterations >= 0 && iteration >= options.iterations) break;
    // The corpus is replayed whole, whatever the budget.
    if (options.only < 0 && options.iterations < 0 && !replaying &&
        std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    const Target* target = nullptr;
    Input input;
    std::string origin;
    if (replaying) {
      const Entry& entry = corpus[static_cast<std::size_t>(iteration)];
      target = entry.target;
      input = entry.input;
      origin = "corpus entry " + entry.name;
    } else {
      Rng rng(options.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(iteration));
      target = chosen[below(rng, chosen.size())];
      std::vector<const Entry*> bases;
      for (const Entry& entry : corpus) {
        if (entry.target == target) bases.push_back(&entry);
      }
      const Entry* base =
          bases.empty() || below(rng, 4) != 0 ? nullptr : bases[below(rng, bases.size())];
      input = target->generate(seeds, base ? &base->input : nullptr, rng);
      origin = base ? "a mutation of " + base->name : "a mutation of the seed";
    }
    std::snprintf(g_case, sizeof g_case,
                  "%s, iteration %lld, %s (reproduce: --seed %llu --only %lld%s%s)", target->name,
                  static_cast<long long>(iteration), origin.c_str(),
                  static_cast<unsigned long long>(options.seed), static_cast<long long>(iteration),
                  options.target.empty() ? "" : " --target ", options.target.c_str());
    const Result result = read_input(*target, input, work);
    if (!result.failure.empty()) {
      std::fprintf(stderr, "fuzz_files: FAILURE: %s in %s\n", result.failure.c_str(), g_case);
      status = 1;
      ++iteration;
      break;
    }
    ++(result.error.empty() ? outcomes[target->name].first : outcomes[target->name].second);
    if (options.show_errors && !result.error.empty()) {
      std::printf("%s: %.300s\n", target->name, result.error.c_str());
    }
    const std::string feature = feature_of(*target, result, work);
    // A corpus entry's features count, but only new inputs are written.
    if (!features.add({feature}).empty() && !replaying && !options.write_corpus.empty()) {
      const Input small = minimise(*target, input, feature, work);
      tandem::fuzz::write_corpus_entry(options.write_corpus, target->corpus_name, serialize(small));
      ++written;
    }
  }
  done.store(true);
  watchdog.join();
  tandem::nd::waitall();
  std::error_code ignored;
  if (options.keep) {
    std::printf("fuzz_files: the last input's files are in %s\n", work.c_str());
  } else {
    fs::remove_all(work, ignored);
  }
  for (const auto& [name, counts] : outcomes) {
    std::printf("fuzz_files: %-20s %8lld values, %8lld errors\n", name.c_str(),
                static_cast<long long>(counts.first), static_cast<long long>(counts.second));
  }
  if (options.show_features) {
    for (const std::string& feature : features.all()) std::printf("feature: %s\n", feature.c_str());
  }
  std::printf("fuzz_files: %zu features%s\n", features.size(),
              options.write_corpus.empty()
                  ? ""
                  : (", " + std::to_string(written) + " entries written to " + options.write_corpus)
                        .c_str());
  std::printf("fuzz_files: %s after %lld iterations (reproduce: --seed %llu --iterations %lld)\n",
              status == 0 ? "passed" : "FAILED", static_cast<long long>(iteration),
              static_cast<unsigned long long>(options.seed), static_cast<long long>(iteration));
  return status;
}
