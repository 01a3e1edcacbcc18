// read_idx / write_idx: the IDX format (see tandem/nd/idx.h for the layout). Every length is
// checked against the file's size before it is used, so no file makes the reader read out of
// bounds or allocate more than the file holds.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/shape_limits.h"
#include "io/byte_order.h"
#include "io/byte_reader.h"
#include "io/file_bytes.h"
#include "io/gunzip.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/idx.h"
#include "tandem/ops/convert.h"

namespace tandem::nd {
namespace {

bool known_type(std::uint8_t code) {
  switch (static_cast<IdxType>(code)) {
    case IdxType::uint8:
    case IdxType::int8:
    case IdxType::int16:
    case IdxType::int32:
    case IdxType::float32:
    case IdxType::float64:
      return true;
  }
  return false;
}

int type_size(IdxType type) {
  switch (type) {
    case IdxType::uint8:
    case IdxType::int8:
      return 1;
    case IdxType::int16:
      return 2;
    case IdxType::int32:
    case IdxType::float32:
      return 4;
    case IdxType::float64:
      return 8;
  }
  return 1;
}

bool is_floating(IdxType type) {
  return type == IdxType::float32 || type == IdxType::float64;
}

// The element at `bytes` (big-endian) as a double: exact for every IDX type.
double decode_element(IdxType type, const unsigned char* bytes) {
  const std::uint64_t raw = detail::decode_big_endian(bytes, type_size(type));
  switch (type) {
    case IdxType::uint8:
      return static_cast<double>(raw);
    case IdxType::int8:
      return static_cast<double>(static_cast<std::int8_t>(raw));
    case IdxType::int16:
      return static_cast<double>(static_cast<std::int16_t>(raw));
    case IdxType::int32:
      return static_cast<double>(static_cast<std::int32_t>(raw));
    case IdxType::float32:
      return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(raw)));
    case IdxType::float64:
      return std::bit_cast<double>(raw);
  }
  return 0;
}

// The range of an integer type, as doubles (exact).
std::pair<double, double> integer_range(IdxType type) {
  switch (type) {
    case IdxType::uint8:
      return {0, 255};
    case IdxType::int8:
      return {-128, 127};
    case IdxType::int16:
      return {-32768, 32767};
    default:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  }
}

void append_element(std::vector<unsigned char>& out, IdxType type, double value) {
  switch (type) {
    case IdxType::float32:
      detail::append_big_endian(out, std::bit_cast<std::uint32_t>(static_cast<float>(value)), 4);
      return;
    case IdxType::float64:
      detail::append_big_endian(out, std::bit_cast<std::uint64_t>(value), 8);
      return;
    default:
      // Two's complement: the low bytes of the int64 are those of the narrower type.
      detail::append_big_endian(out, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)),
                                type_size(type));
  }
}

}  // namespace

const char* idx_type_name(IdxType type) {
  switch (type) {
    case IdxType::uint8:
      return "uint8";
    case IdxType::int8:
      return "int8";
    case IdxType::int16:
      return "int16";
    case IdxType::int32:
      return "int32";
    case IdxType::float32:
      return "float32";
    case IdxType::float64:
      return "float64";
  }
  return "unknown";
}

NDArray read_idx(const std::string& path, DType dtype, Device device) {
  std::vector<unsigned char> bytes = detail::read_file_bytes("read_idx", path);
  if (detail::is_gzip(bytes)) bytes = detail::gunzip("read_idx", path, bytes);
  detail::ByteReader in("read_idx", path, bytes);
  const unsigned char* magic = in.take(4, "the magic number");
  if (magic[0] != 0 || magic[1] != 0) {
    in.fail("is not an IDX file (it starts with neither two zero bytes nor gzip's magic number)");
  }
  if (!known_type(magic[2])) {
    in.fail("has the unknown IDX element type code " + std::to_string(magic[2]) +
            " (known: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E "
            "float64)");
  }
  const auto type = static_cast<IdxType>(magic[2]);
  const int rank = magic[3];
  if (rank == 0 || rank > ops::kMaxDims) {
    in.fail("has rank " + std::to_string(rank) + "; an array has 1 to " +
            std::to_string(ops::kMaxDims) + " dimensions");
  }
  if (is_floating(type) && !ops::is_floating(dtype)) {
    in.fail(std::string("holds ") + idx_type_name(type) + " elements; read it as float32 or " +
            "float64, not " + dtype_name(dtype));
  }
  Shape shape;
  for (int axis = 0; axis < rank; ++axis) {
    shape.push_back(static_cast<std::int64_t>(
        in.big_endian(4, "dimension " + std::to_string(axis) + " of " + std::to_string(rank))));
  }
  const auto element_size = static_cast<std::uint64_t>(type_size(type));
  if (!detail::shape_fits(shape, element_size)) {
    in.fail("has the shape " + shape.to_string() + " of " + idx_type_name(type) +
            ", too large: the product of its dimensions overflows a 64-bit size");
  }
  const std::uint64_t max_elements = in.remaining() / element_size;
  std::uint64_t elements = 1;
  for (const std::int64_t dim : shape) {
    const auto udim = static_cast<std::uint64_t>(dim);
    elements = (udim != 0 && elements > max_elements / udim) ? max_elements + 1 : elements * udim;
  }
  const std::string layout = "shape " + shape.to_string() + " of " + idx_type_name(type);
  if (elements > max_elements) {
    in.fail("is truncated: its header gives " + layout + ", which needs more than the " +
            std::to_string(in.remaining()) + " bytes of data it holds");
  }
  const std::size_t data_bytes = static_cast<std::size_t>(elements * element_size);
  if (in.remaining() != data_bytes) {
    in.fail("has " + std::to_string(in.remaining() - data_bytes) +
            " bytes more than its header says (" + layout + ": " + std::to_string(data_bytes) +
            " bytes of data)");
  }
  const unsigned char* data = in.take(data_bytes, "the elements");
  NDArray out;
  ops::dispatch_storage_dtype(dtype, [&]<class T>(T) {
    std::vector<T> values(static_cast<std::size_t>(elements));
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      if (type == IdxType::uint8) {  // the common case (images): the bytes as they are
        // An empty array's vector has no buffer: memcpy must not see its null pointer.
        if (!values.empty()) std::memcpy(values.data(), data, values.size());
        out = from_vector(values, shape, device);
        return;
      }
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = ops::convert<T>(decode_element(type, data + i * element_size));
    }
    out = from_vector(values, shape, device);
  });
  return out;
}

void write_idx(const std::string& path, const NDArray& array, IdxType type) {
  if (!array.defined()) {
    throw Error("tandem: write_idx: the array for '" + path + "' is a null NDArray");
  }
  if (!known_type(static_cast<std::uint8_t>(type))) {
    throw Error("tandem: write_idx: unknown IDX element type code " +
                std::to_string(static_cast<int>(type)) + " for '" + path + "'");
  }
  if (array.ndim() == 0) {
    throw Error("tandem: write_idx: IDX holds arrays of 1 or more dimensions; the array for '" +
                path + "' is 0-d (reshape it to {1})");
  }
  for (const std::int64_t dim : array.shape()) {
    if (dim > std::numeric_limits<std::uint32_t>::max()) {
      throw Error("tandem: write_idx: shape " + array.shape().to_string() + " for '" + path +
                  "' has a dimension past IDX's 2^32 - 1");
    }
  }
  const std::vector<double> values = array.to_vector<double>();
  if (!is_floating(type)) {
    const auto [low, high] = integer_range(type);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!(values[i] >= low && values[i] <= high && std::trunc(values[i]) == values[i])) {
        throw Error("tandem: write_idx: element " + std::to_string(i) + " of the array for '" +
                    path + "' is " + std::to_string(values[i]) + ", not a whole number in " +
                    idx_type_name(type) + "'s range [" + std::to_string(low) + ", " +
                    std::to_string(high) + "]; nothing was written");
      }
    }
  }
  std::vector<unsigned char> out{0, 0, static_cast<unsigned char>(type),
                                 static_cast<unsigned char>(array.ndim())};
  for (const std::int64_t dim : array.shape()) {
    detail::append_big_endian(out, static_cast<std::uint64_t>(dim), 4);
  }
  out.reserve(out.size() + values.size() * static_cast<std::size_t>(type_size(type)));
  for (const double value : values) {
    append_element(out, type, value);
  }
  detail::write_file_bytes("write_idx", path, out);
}

}  // namespace tandem::nd
