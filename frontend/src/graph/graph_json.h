// How the exported graph's JSON spells shapes, dtypes and scalars (docs/file-format.md), for the
// export (op_trace.cc) and the import (nn/imported_block.cc) alike.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace tandem::nd::detail
