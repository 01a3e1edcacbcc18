// nd::save / nd::load: the array file format of docs/file-format.md, version 1.
//
//   magic "TANDEMND" (8 bytes) | version u32 | count u32 |
//   count x { name_length u32 | name | dtype u8 | rank u8 | rank x dim i64 | byte_count u64 |
//             bytes } |
//   crc32 u32 of every byte before it
//
// All integers and array elements are little-endian. The reader checks every length against
// the bytes that are left before using it, so no corrupt file can make it read out of bounds
// or allocate more than the file's size.
#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "core/shape_limits.h"
#include "io/byte_order.h"
#include "io/byte_reader.h"
#include "io/crc32.h"
#include "io/file_bytes.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/save_load.h"

namespace tandem::nd {
namespace {

constexpr char kMagic[8] = {'T', 'A', 'N', 'D', 'E', 'M', 'N', 'D'};
constexpr std::uint32_t kVersion = 1;

// The dtype codes of the file: fixed by the format, independent of the DType enumeration.
std::uint8_t dtype_code(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return 1;
    case DType::float64:
      return 2;
    case DType::int32:
      return 3;
    case DType::int64:
      return 4;
    case DType::uint8:
      return 5;
  }
  return 0;
}

bool dtype_from_code(std::uint8_t code, DType* dtype) {
  switch (code) {
    case 1:
      *dtype = DType::float32;
      return true;
    case 2:
      *dtype = DType::float64;
      return true;
    case 3:
      *dtype = DType::int32;
      return true;
    case 4:
      *dtype = DType::int64;
      return true;
    case 5:
      *dtype = DType::uint8;
      return true;
    default:
      return false;
  }
}

std::string quoted(const std::string& name) {
  return "'" + name + "'";
}

// The array's values in row-major order as little-endian bytes; waits for them.
std::vector<unsigned char> little_endian_values(const NDArray& array) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(array.size()) *
                                   ops::dtype_size(array.dtype()));
  ops::dispatch_storage_dtype(array.dtype(), [&]<class T>(T) {
    const std::vector<T> values = array.to_vector<T>();
    if (!values.empty()) {
      std::memcpy(bytes.data(), values.data(), bytes.size());
    }
  });
  detail::host_to_from_little_endian(bytes.data(), static_cast<std::size_t>(array.size()),
                                     ops::dtype_size(array.dtype()));
  return bytes;
}

void check_savable(const std::string& path, const NamedArrays& arrays) {
  std::set<std::string> names;
  for (const auto& [name, array] : arrays) {
    if (!array.defined()) {
      throw Error("tandem: save: array " + quoted(name) + " for '" + path +
                  "' is a null NDArray (default-constructed); nothing was written");
    }
    if (!names.insert(name).second) {
      throw Error("tandem: save: the name " + quoted(name) + " appears twice in the arrays for '" +
                  path + "'; names in one file must be unique; nothing was written");
    }
  }
  if (arrays.size() > UINT32_MAX) {
    throw Error("tandem: save: too many arrays for '" + path + "' (" +
                std::to_string(arrays.size()) + "; the format holds up to 2^32 - 1)");
  }
}

// One entry as parsed: the data still lies in the file's buffer.
struct ParsedEntry {
  std::string name;
  DType dtype = DType::float32;
  Shape shape;
  const unsigned char* bytes = nullptr;
  std::size_t byte_count = 0;
};

ParsedEntry parse_entry(detail::ByteReader& in, std::uint32_t index) {
  ParsedEntry entry;
  const std::string which = "array " + std::to_string(index);
  const auto name_length = in.little_endian(4, "the name length of " + which);
  const unsigned char* name = in.take(name_length, "the name of " + which);
  entry.name.assign(reinterpret_cast<const char*>(name), name_length);
  const std::string what = which + " (" + quoted(entry.name) + ")";
  const auto code = static_cast<std::uint8_t>(in.little_endian(1, "the dtype of " + what));
  if (!dtype_from_code(code, &entry.dtype)) {
    in.fail("has an unsupported dtype code " + std::to_string(code) + " for " + what +
            " (known: 1 float32, 2 float64, 3 int32, 4 int64); the file is corrupt or from a "
            "newer tandem");
  }
  const auto rank = static_cast<int>(in.little_endian(1, "the rank of " + what));
  if (rank > ops::kMaxDims) {
    in.fail("gives " + what + " rank " + std::to_string(rank) + ", more than the " +
            std::to_string(ops::kMaxDims) + " dimensions an array can have (corrupt file)");
  }
  const std::uint64_t element_size = ops::dtype_size(entry.dtype);
  // Bounded by the file's size: a shape whose bytes could not be in the file is corrupt.
  const std::uint64_t max_elements = in.remaining() / element_size;
  std::uint64_t elements = 1;
  for (int axis = 0; axis < rank; ++axis) {
    const auto dim = static_cast<std::int64_t>(
        in.little_endian(8, "dimension " + std::to_string(axis) + " of " + what));
    if (dim < 0) {
      in.fail("gives " + what + " the negative dimension " + std::to_string(dim) +
              " (corrupt file)");
    }
    entry.shape.push_back(dim);
    const auto udim = static_cast<std::uint64_t>(dim);
    elements = (udim != 0 && elements > max_elements / udim) ? max_elements + 1 : elements * udim;
  }
  if (!detail::shape_fits(entry.shape, element_size)) {
    in.fail("gives " + what + " the shape " + entry.shape.to_string() +
            ", too large: the product of its dimensions overflows a 64-bit size (corrupt file)");
  }
  const std::uint64_t byte_count = in.little_endian(8, "the byte count of " + what);
  if (elements > max_elements) {
    in.fail("is truncated or corrupt: " + what + " has shape " + entry.shape.to_string() +
            ", more data than the file holds");
  }
  if (byte_count != elements * element_size) {
    in.fail("is corrupt: " + what + " of shape " + entry.shape.to_string() + " and dtype " +
            dtype_name(entry.dtype) + " should have " + std::to_string(elements * element_size) +
            " bytes, the file says " + std::to_string(byte_count));
  }
  entry.byte_count = static_cast<std::size_t>(byte_count);
  entry.bytes = in.take(entry.byte_count, "the data of " + what);
  return entry;
}

std::vector<ParsedEntry> parse_file(const std::string& path,
                                    const std::vector<unsigned char>& bytes) {
  detail::ByteReader in("load", path, bytes);
  const unsigned char* magic = in.take(sizeof kMagic, "the magic number");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    in.fail("is not a tandem array file (its first 8 bytes are not \"TANDEMND\")");
  }
  const auto version = in.little_endian(4, "the version");
  if (version != kVersion) {
    in.fail("has format version " + std::to_string(version) + "; this tandem reads version " +
            std::to_string(kVersion) + " (the file is from a newer tandem, or corrupt)");
  }
  const auto count = static_cast<std::uint32_t>(in.little_endian(4, "the array count"));
  std::vector<ParsedEntry> entries;
  std::set<std::string> names;
  for (std::uint32_t i = 0; i < count; ++i) {
    entries.push_back(parse_entry(in, i));
    if (!names.insert(entries.back().name).second) {
      in.fail("holds two arrays named " + quoted(entries.back().name) + " (corrupt file)");
    }
  }
  const std::size_t checked = in.offset();
  const auto stored_crc = static_cast<std::uint32_t>(in.little_endian(4, "the checksum"));
  if (in.remaining() != 0) {
    in.fail("has " + std::to_string(in.remaining()) + " bytes after its checksum (it declares " +
            std::to_string(count) + " arrays; corrupt file)");
  }
  const std::uint32_t crc = detail::crc32(bytes.data(), checked);
  if (crc != stored_crc) {
    in.fail("is corrupt: its CRC-32 is " + std::to_string(crc) + ", the file says " +
            std::to_string(stored_crc));
  }
  return entries;
}

}  // namespace

void save(const std::string& path, const NamedArrays& arrays) {
  check_savable(path, arrays);
  std::vector<unsigned char> out(kMagic, kMagic + sizeof kMagic);
  detail::append_little_endian(out, kVersion, 4);
  detail::append_little_endian(out, arrays.size(), 4);
  for (const auto& [name, array] : arrays) {
    detail::append_little_endian(out, name.size(), 4);
    out.insert(out.end(), name.begin(), name.end());
    detail::append_little_endian(out, dtype_code(array.dtype()), 1);
    detail::append_little_endian(out, static_cast<std::uint64_t>(array.ndim()), 1);
    for (const std::int64_t dim : array.shape()) {
      detail::append_little_endian(out, static_cast<std::uint64_t>(dim), 8);
    }
    const std::vector<unsigned char> values = little_endian_values(array);
    detail::append_little_endian(out, values.size(), 8);
    out.insert(out.end(), values.begin(), values.end());
  }
  detail::append_little_endian(out, detail::crc32(out.data(), out.size()), 4);
  detail::write_file_bytes("save", path, out);
}

void save(const std::string& path, const NDArray& array) {
  save(path, NamedArrays{{"", array}});
}

NamedArrays load(const std::string& path, Device device) {
  const std::vector<unsigned char> bytes = detail::read_file_bytes("load", path);
  const std::vector<ParsedEntry> entries = parse_file(path, bytes);
  NamedArrays arrays;
  arrays.reserve(entries.size());
  for (const ParsedEntry& entry : entries) {
    const std::size_t element_size = ops::dtype_size(entry.dtype);
    const auto count = static_cast<std::int64_t>(entry.byte_count / element_size);
    const unsigned char* values = entry.bytes;
    std::vector<unsigned char> host_order;
    if constexpr (std::endian::native != std::endian::little) {
      host_order.assign(entry.bytes, entry.bytes + entry.byte_count);
      detail::host_to_from_little_endian(host_order.data(), host_order.size() / element_size,
                                         element_size);
      values = host_order.data();
    }
    // from_host copies the values in this call (unaligned bytes are fine: it copies bytes).
    arrays.emplace_back(entry.name, from_host(values, count, entry.dtype, entry.shape, device));
  }
  return arrays;
}

NDArray load_array(const std::string& path, Device device) {
  NamedArrays arrays = load(path, device);
  if (arrays.size() != 1) {
    throw Error("tandem: load_array: '" + path + "' holds " + std::to_string(arrays.size()) +
                " arrays; load_array reads a file of exactly one (use nd::load)");
  }
  return arrays.front().second;
}

void load_into(const std::string& path, const NamedArrays& targets,
               const LoadIntoOptions& options) {
  const NamedArrays loaded = load(path);
  std::set<std::string> target_names;
  std::vector<std::pair<NDArray, NDArray>> copies;  // source, target
  for (const auto& [name, target] : targets) {
    if (!target.defined()) {
      throw Error("tandem: load_into: the target " + quoted(name) + " for '" + path +
                  "' is a null NDArray");
    }
    if (!target_names.insert(name).second) {
      throw Error("tandem: load_into: the name " + quoted(name) + " appears twice in the targets");
    }
    const auto match = std::find_if(loaded.begin(), loaded.end(),
                                    [&](const auto& entry) { return entry.first == name; });
    if (match == loaded.end()) {
      if (options.allow_missing) {
        continue;
      }
      throw Error("tandem: load_into: '" + path + "' has no array named " + quoted(name) +
                  " (set allow_missing to keep the target's values); nothing was loaded");
    }
    const NDArray& source = match->second;
    if (source.shape() != target.shape() || source.dtype() != target.dtype()) {
      throw Error("tandem: load_into: array " + quoted(name) + " of '" + path + "' is " +
                  source.shape().to_string() + " " + dtype_name(source.dtype()) +
                  ", the target is " + target.shape().to_string() + " " +
                  dtype_name(target.dtype()) + "; nothing was loaded");
    }
    copies.emplace_back(source, target);
  }
  if (!options.ignore_extra) {
    for (const auto& [name, array] : loaded) {
      if (target_names.count(name) == 0) {
        throw Error("tandem: load_into: '" + path + "' has an array named " + quoted(name) +
                    " that no target has (set ignore_extra to skip it); nothing was loaded");
      }
    }
  }
  for (const auto& [source, target] : copies) {
    source.copyto(target);
  }
}

NDArray find(const NamedArrays& arrays, const std::string& name) {
  std::string known;
  for (const auto& [entry_name, array] : arrays) {
    if (entry_name == name) {
      return array;
    }
    known += (known.empty() ? "" : ", ") + quoted(entry_name);
  }
  throw Error("tandem: find: no array named " + quoted(name) +
              " (the arrays are: " + (known.empty() ? "none" : known) + ")");
}

}  // namespace tandem::nd
