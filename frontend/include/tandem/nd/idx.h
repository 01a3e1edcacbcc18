// The IDX format of MNIST and Fashion-MNIST: read_idx and write_idx.
//
//   auto images = nd::read_idx("train-images-idx3-ubyte", nd::float32);  // 60000x28x28 floats
//   auto labels = nd::read_idx("train-labels-idx1-ubyte");               // 60000 int32 labels
//   auto raw = nd::read_idx("t10k-images-idx3-ubyte.gz", nd::uint8);     // 10000x28x28 bytes
//   nd::write_idx("labels.idx1-ubyte", labels, nd::IdxType::uint8);
//
// An IDX file is: two zero bytes, the element type (IdxType), the rank; one big-endian uint32
// per dimension; then the elements, row-major, big-endian. read_idx takes the file as it is or
// gzipped (the .gz files of the MNIST distribution and of Debian's dataset-fashion-mnist; told
// apart by gzip's magic number, not by the name). A file that is missing, truncated, longer than
// its dimensions say, a damaged or cut-short gzip stream, or has an unknown type or a zero rank
// is a tandem::Error naming the file and what was wrong.
#pragma once

#include <cstdint>
#include <string>

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

// The element types of IDX (the third byte of the file).
enum class IdxType : std::uint8_t {
  uint8 = 0x08,
  int8 = 0x09,
  int16 = 0x0B,
  int32 = 0x0C,
  float32 = 0x0D,
  float64 = 0x0E,
};

// "uint8", "int8", "int16", "int32", "float32", "float64".
const char* idx_type_name(IdxType type);

// The array in the IDX file at `path`, with the file's shape, converted to `dtype`, on `device`.
// Integer files are read as int32 by default (values kept exactly) or converted to any dtype
// asked for: nd::uint8 keeps a uint8 file's bytes as they are (a quarter of float32's memory;
// other types saturate to 0..255), float32 gives pixel values 0..255 as floats. A file of
// floating-point elements must be read as float32 or float64. Returns once the file is read.
NDArray read_idx(const std::string& path, DType dtype = int32, Device device = cpu());

// Writes `array` to `path` as an IDX file of element type `type` (replacing it; the file
// appears under `path` once complete). A sync point: waits for the array's values. For an
// integer type every value must be a whole number in the type's range (else tandem::Error
// naming the first one that is not; nothing is written); float32 rounds float64 values.
void write_idx(const std::string& path, const NDArray& array, IdxType type);

}  // namespace tandem::nd
