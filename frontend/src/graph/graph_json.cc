#include "graph/graph_json.h"

#include <cmath>
#include <limits>

#include "tandem/errors.h"

namespace tandem::nd::detail {

nlohmann::json shape_to_json(const Shape& shape) {
  nlohmann::json dims = nlohmann::json::array();
  for (int i = 0; i < shape.ndim(); ++i) dims.push_back(shape[i]);
  return dims;
}

Shape shape_from_json(const nlohmann::json& value, const std::string& what) {
  if (!value.is_array() || value.size() > static_cast<std::size_t>(ops::kMaxDims)) {
    throw Error("tandem: " + what + ": expected a shape (a list of at most " +
                std::to_string(ops::kMaxDims) + " integers), got " + value.dump());
  }
  Shape shape;
  for (const nlohmann::json& dim : value) {
    if (!dim.is_number_integer()) {
      throw Error("tandem: " + what + ": expected integer dimensions, got " + value.dump());
    }
    shape.push_back(dim.get<std::int64_t>());
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
              ": expected a dtype (float32, float64, int32, int64 or uint8), got " + value.dump());
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
              value.dump());
}

}  // namespace tandem::nd::detail
