// Saving arrays to a file and loading them back: nd::save / nd::load, as MXNet's.
//
//   nd::save("params.tnd", {{"weight", w}, {"bias", b}});   // a sync point for w and b
//   nd::NamedArrays params = nd::load("params.tnd");        // on cpu(0), in saved order
//   nd::NamedArrays on_sim = nd::load("params.tnd", tandem::sim(0));
//   nd::NDArray w2 = nd::find(params, "weight");
//
// The file format (docs/file-format.md): little-endian, versioned, one entry per array (name,
// dtype, shape, bytes), closed by a CRC-32 of everything before it. Any file that does not
// parse (missing, truncated, wrong magic, unknown version, unknown dtype, inconsistent sizes,
// duplicate names, trailing bytes, a checksum mismatch) makes load throw tandem::Error naming
// the file and what was wrong; nothing is loaded then.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tandem/nd/ndarray.h"

namespace tandem::nd {

// Arrays with names, in order. Names are unique within one file (any bytes, empty allowed).
using NamedArrays = std::vector<std::pair<std::string, NDArray>>;

// Writes `arrays` to `path` (replacing it). A sync point: waits for each array's values (from
// any device: they are read back to the host) and rethrows an error an array carries. The file
// appears under `path` only once it is complete and on the disk (written to a temporary file of
// this save alone, "<path>.tmp.<pid>.<n>", fsync'ed, then renamed over `path`): a process killed
// mid-save leaves the old file whole.
// Throws tandem::Error for a null array, duplicate names, or a file that cannot be written.
void save(const std::string& path, const NamedArrays& arrays);
// One array, saved under the empty name; load_array reads it back.
void save(const std::string& path, const NDArray& array);

// The arrays of the file at `path`, in saved order, created on `device`. Returns once the file
// is read; the arrays are on the host at once, and on an accelerator the copies are queued.
NamedArrays load(const std::string& path, Device device = cpu());
// The only array of a file that holds exactly one (as written by save(path, array)).
NDArray load_array(const std::string& path, Device device = cpu());

// What load_into tolerates (Gluon's load_parameters flags).
struct LoadIntoOptions {
  bool allow_missing = false;  // targets the file does not have keep their values
  bool ignore_extra = false;   // arrays of the file no target names are skipped
};

// Loads the file's values into existing arrays, matched by name (e.g. a network's parameters,
// on any device): each file array must have its target's shape and dtype. Everything is checked
// before anything is written: a missing or extra name, a shape or a dtype that differs throws
// tandem::Error naming the file, the array and both sides, and leaves every target as it was.
// The copies into the targets are queued (copyto), like any write.
//   nd::load_into("params.tnd", {{"weight", w}, {"bias", b}});
void load_into(const std::string& path, const NamedArrays& targets,
               const LoadIntoOptions& options = {});

// The array called `name`; throws tandem::Error listing the names there are when none is.
NDArray find(const NamedArrays& arrays, const std::string& name);

}  // namespace tandem::nd
