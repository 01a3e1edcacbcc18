// The committed corpus of tandem's fuzzers (tests/fuzz/corpus/<fuzzer>/): one input per file,
// named by its target and the hash of its bytes, replayed in name order before any mutation.
// The features an input reached decide what is worth keeping (see each fuzzer's --write-corpus).
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tandem::fuzz {

using Bytes = std::vector<unsigned char>;

inline Bytes read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file_bytes(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline std::uint64_t fnv1a64(const Bytes& bytes) {
  std::uint64_t hash = 1469598103934665603ull;
  for (unsigned char b : bytes) hash = (hash ^ b) * 1099511628211ull;
  return hash;
}

struct CorpusEntry {
  std::string name;  // the file's name: "<target>-<16 hex digits>"
  Bytes bytes;
};

// Every regular file of `dir`, in name order; none when `dir` does not exist.
inline std::vector<CorpusEntry> read_corpus(const std::filesystem::path& dir) {
  std::vector<CorpusEntry> entries;
  std::error_code error;
  if (dir.empty() || !std::filesystem::is_directory(dir, error)) return entries;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    if (file.is_regular_file()) {
      entries.push_back({file.path().filename().string(), read_file_bytes(file.path())});
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const CorpusEntry& a, const CorpusEntry& b) { return a.name < b.name; });
  return entries;
}

// Writes `bytes` to `dir` as "<target>-<hash>"; returns the name.
inline std::string write_corpus_entry(const std::filesystem::path& dir, const std::string& target,
                                      const Bytes& bytes) {
  std::filesystem::create_directories(dir);
  char name[128];
  std::snprintf(name, sizeof name, "%s-%016" PRIx64, target.c_str(), fnv1a64(bytes));
  write_file_bytes(dir / name, bytes);
  return name;
}

// An error message reduced to its kind: `drop` (e.g. a temporary directory's name) and quoted
// text (names, paths) are left out, numbers (and shapes) become '#', and it
// is cut after `length` characters.
inline std::string message_kind(const std::string& message, const std::string& drop = "",
                                std::size_t length = 64) {
  std::string text = message;
  for (std::size_t at; !drop.empty() && (at = text.find(drop)) != std::string::npos;) {
    text.replace(at, drop.size(), "");
  }
  std::string out;
  char quote = 0;
  for (char c : text) {
    if (out.size() >= length) break;
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += "''";
    } else if (c >= '0' && c <= '9') {
      // "2x3x4" and "7" are one kind: a shape.
      if (out.size() >= 2 && out.back() == 'x' && out[out.size() - 2] == '#') out.pop_back();
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += c;
    }
  }
  return out;
}

// The features seen so far; `add` returns those of `features` that were new.
class FeatureSet {
 public:
  std::vector<std::string> add(const std::vector<std::string>& features) {
    std::vector<std::string> added;
    for (const std::string& f : features) {
      if (seen_.insert(f).second) added.push_back(f);
    }
    return added;
  }
  std::size_t size() const { return seen_.size(); }
  const std::set<std::string>& all() const { return seen_; }

 private:
  std::set<std::string> seen_;
};

// Whether `features` holds every one of `wanted` (a minimised input must keep what it added).
inline bool has_all(const std::vector<std::string>& features,
                    const std::vector<std::string>& wanted) {
  const std::set<std::string> have(features.begin(), features.end());
  for (const std::string& f : wanted) {
    if (!have.count(f)) return false;
  }
  return true;
}

}  // namespace tandem::fuzz
