#include "graph/graph_json.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/shape_limits.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

nlohmann::json parse_json(std::span<const unsigned char> bytes, const std::string& what) {
  using json = nlohmann::json;
  // The parser itself keeps its own stack; the depth is checked as each array or object opens,
  // so a document nested 100,000 deep is refused before dump() or a destructor walks it.
  const json::parser_callback_t limit_depth = [&what](int depth, json::parse_event_t event, json&) {
    if (depth >= kMaxJsonDepth &&
        (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start)) {
      throw Error("tandem: " + what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels");
    }
    return true;
  };
  return json::parse(bytes.begin(), bytes.end(), limit_depth, false);
}

std::string json_excerpt(const nlohmann::json& value) {
  constexpr std::size_t kShown = 64;
  const std::string text = value.dump();
  if (text.size() <= kShown) return text;
  return text.substr(0, kShown) + "... (" + std::to_string(text.size()) + " characters)";
}

std::int64_t integer_from_json(const nlohmann::json& value, const std::string& what) {
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw MalformedAttribute("tandem: " + what + ": the integer " + json_excerpt(value) +
                             " is out of range (at most 2^63 - 1)");
  }
  if (!value.is_number_integer()) {
    throw MalformedAttribute("tandem: " + what + ": expected an integer, got " +
                             json_excerpt(value));
  }
  return value.get<std::int64_t>();
}

int int_from_json(const nlohmann::json& value, const std::string& what) {
  const std::int64_t integer = integer_from_json(value, what);
  if (integer < std::numeric_limits<int>::min() || integer > std::numeric_limits<int>::max()) {
    throw MalformedAttribute("tandem: " + what + ": the integer " + std::to_string(integer) +
                             " is out of range (an axis or a count must fit in 32 bits)");
  }
  return static_cast<int>(integer);
}

std::vector<int> ints_from_json(const nlohmann::json& value, const std::string& what) {
  if (!value.is_array() || value.size() > static_cast<std::size_t>(ops::kMaxDims)) {
    throw MalformedAttribute("tandem: " + what + ": expected a list of at most " +
                             std::to_string(ops::kMaxDims) + " integers, got " +
                             json_excerpt(value));
  }
  std::vector<int> values;
  for (const nlohmann::json& item : value) values.push_back(int_from_json(item, what));
  return values;
}

nlohmann::json shape_to_json(const Shape& shape) {
  nlohmann::json dims = nlohmann::json::array();
  for (int i = 0; i < shape.ndim(); ++i) dims.push_back(shape[i]);
  return dims;
}

Shape shape_from_json(const nlohmann::json& value, const std::string& what) {
  if (!value.is_array() || value.size() > static_cast<std::size_t>(ops::kMaxDims)) {
    throw Error("tandem: " + what + ": expected a shape (a list of at most " +
                std::to_string(ops::kMaxDims) + " integers), got " + json_excerpt(value));
  }
  Shape shape;
  for (const nlohmann::json& dim : value) {
    if (!dim.is_number_integer()) {
      throw Error("tandem: " + what + ": expected integer dimensions, got " + json_excerpt(value));
    }
    shape.push_back(integer_from_json(dim, what));
  }
  if (!shape_fits(shape, 1)) {
    throw Error("tandem: " + what + ": the shape " + shape.to_string() +
                " has a negative dimension or is too large (the product of its dimensions "
                "overflows a 64-bit size)");
  }
  return shape;
}

DType dtype_from_json(const nlohmann::json& value, const std::string& what) {
  if (value.is_string()) {
    for (DType dtype : {float32, float64, int32, int64, uint8}) {
      if (value.get<std::string>() == dtype_name(dtype)) return dtype;
    }
  }
  throw Error("tandem: " + what +
              ": expected a dtype (float32, float64, int32, int64 or uint8), got " +
              json_excerpt(value));
}

nlohmann::json scalar_to_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

double scalar_from_json(const nlohmann::json& value, const std::string& what) {
  if (value.is_number()) return value.get<double>();
  if (value == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (value == "inf") return std::numeric_limits<double>::infinity();
  if (value == "-inf") return -std::numeric_limits<double>::infinity();
  throw Error("tandem: " + what + ": expected a number (or \"inf\", \"-inf\", \"nan\"), got " +
              json_excerpt(value));
}

}  // namespace tandem::nd::detail
