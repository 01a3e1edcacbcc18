// How the exported graph's JSON spells shapes, dtypes and scalars (docs/file-format.md), for the
// export (op_trace.cc) and the import (nn/imported_block.cc) alike.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/op_definition.h"
#include "tandem/errors.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

nlohmann::json shape_to_json(const Shape& shape);
// Throws tandem::Error naming `what` when `value` is not a list of at most kMaxDims integers.
Shape shape_from_json(const nlohmann::json& value, const std::string& what);

// "float32", ...; dtype_from_json throws tandem::Error naming `what` for another string.
DType dtype_from_json(const nlohmann::json& value, const std::string& what);

// A double exactly (JSON numbers round-trip); infinities and NaN, which JSON lacks, as the
// strings "inf", "-inf" and "nan".
nlohmann::json scalar_to_json(double value);
double scalar_from_json(const nlohmann::json& value, const std::string& what);

// A graph file nests at most this deep (the format itself needs 4 levels); deeper is refused
// while parsing, before anything recurses over the value.
inline constexpr int kMaxJsonDepth = 64;

// The JSON document in `bytes`; a discarded value when they are not JSON. Throws tandem::Error
// naming `what` when the document nests deeper than kMaxJsonDepth.
nlohmann::json parse_json(std::span<const unsigned char> bytes, const std::string& what);

// `value` as an error message shows it: its JSON text, cut at 64 characters with the full
// length said ("[[[[... (200001 characters)").
std::string json_excerpt(const nlohmann::json& value);

// An integer read from a file, range-checked: a non-integer, an unsigned value beyond int64, or
// (int_from_json) a value outside int's range throws MalformedAttribute naming `what` and the value
// (nothing is truncated: [1, 4294967296] is not read as [1, 0]).
std::int64_t integer_from_json(const nlohmann::json& value, const std::string& what);
int int_from_json(const nlohmann::json& value, const std::string& what);
std::vector<int> ints_from_json(const nlohmann::json& value, const std::string& what);

// An op record's attributes (core/op_definition.h) written into a node's "attrs" object.
class JsonAttrWriter final : public OpAttrWriter {
 public:
  explicit JsonAttrWriter(nlohmann::json& attrs) : attrs_(attrs) {}
  void integer(const char* key, std::int64_t value) override { attrs_[key] = value; }
  void boolean(const char* key, bool value) override { attrs_[key] = value; }
  void scalar(const char* key, double value) override { attrs_[key] = scalar_to_json(value); }
  void integers(const char* key, std::span<const std::int64_t> values) override {
    attrs_[key] = nlohmann::json(std::vector<std::int64_t>(values.begin(), values.end()));
  }
  void shape(const char* key, const Shape& value) override { attrs_[key] = shape_to_json(value); }
  void dtype(const char* key, DType value) override { attrs_[key] = dtype_name(value); }

 private:
  nlohmann::json& attrs_;
};

// And read back from an imported node's "attrs".
class JsonAttrReader final : public OpAttrReader {
 public:
  explicit JsonAttrReader(const nlohmann::json& attrs) : attrs_(attrs) {}
  bool has(const char* key) const override { return attrs_.contains(key); }
  std::int64_t integer(const char* key) const override {
    return integer_from_json(attrs_.at(key), key);
  }
  bool boolean(const char* key) const override { return attrs_.at(key).get<bool>(); }
  double scalar(const char* key) const override { return scalar_from_json(attrs_.at(key), key); }
  std::vector<std::int64_t> integers(const char* key) const override {
    const nlohmann::json& list = attrs_.at(key);
    if (!list.is_array()) {
      throw MalformedAttribute(std::string("tandem: ") + key +
                               ": expected a list of integers, got " + json_excerpt(list));
    }
    std::vector<std::int64_t> values;
    for (const nlohmann::json& value : list) values.push_back(integer_from_json(value, key));
    return values;
  }
  Shape shape(const char* key) const override { return shape_from_json(attrs_.at(key), key); }
  DType dtype(const char* key) const override { return dtype_from_json(attrs_.at(key), key); }

 private:
  const nlohmann::json& attrs_;
};

}  // namespace tandem::nd::detail
