// One record per op: what the modes, the graph import and the tests need to know about an op.
// The element-wise rows' records are generated from the rows (ops/elementwise_records.cc), the
// views' and copies' are in core/views.cc; an op file defines one constant OpDefinition per
// graph node name, next to the op:
//
//   struct TakeAttrs { int axis; };
//   const detail::OpDefinition kTake{
//       .name = "take",
//       .num_inputs = 2,
//       .write_attrs = [](const detail::OpCall& c, detail::OpAttrWriter& w) {
//         w.integer("axis", detail::attrs_of<TakeAttrs>(c).axis);
//       },
//       .import = [](const detail::OpAttrReader& r, const std::vector<NDArray>& in) {
//         return take(in[0], in[1], static_cast<int>(r.integer("axis")));
//       },
//       .gradient = take_gradient,   // builds an OpGradient from the call
//       .examples = take_examples};  // calls of the op for tests/frontend/op_records_test.cc
//
// and runs through detail::invoke (core/invoke.h; a view through report_view, core/modes.h),
// which reports an OpCall pointing at it. The
// modes read the record, never the op: the export trace writes a node named `name` with
// write_attrs' attributes, autograd records `gradient`'s rule, and the graph import
// (graph/graph_ops.cc) finds the record by name and calls `import`. So a new op adds nothing to
// core/modes.h, autograd/, or graph/: only its file's TANDEM_OP_DEFINITIONS line lists it.
//
// The attributes go through OpAttrWriter / OpAttrReader, which graph/ implements over the graph
// JSON (docs/file-format.md): the op files never see the JSON library.
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/modes.h"
#include "tandem/errors.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd::detail {

// An attribute (or another value) read from a file that is not what it must be; the graph
// import reports it with its node ("node 3 (transpose) has a malformed attribute: ...").
class MalformedAttribute : public Error {
 public:
  using Error::Error;
};

// Where a record's attributes go when the op is exported.
class OpAttrWriter {
 public:
  virtual ~OpAttrWriter() = default;
  virtual void integer(const char* key, std::int64_t value) = 0;
  virtual void boolean(const char* key, bool value) = 0;
  // Any double, infinities and NaN included.
  virtual void scalar(const char* key, double value) = 0;
  virtual void integers(const char* key, std::span<const std::int64_t> values) = 0;
  virtual void shape(const char* key, const Shape& value) = 0;
  virtual void dtype(const char* key, DType value) = 0;
};

// Where they come from when a graph is imported. A missing key or a value of another type
// throws (tandem::Error or the JSON library's exception, which the import reports with the
// node).
class OpAttrReader {
 public:
  virtual ~OpAttrReader() = default;
  virtual bool has(const char* key) const = 0;
  virtual std::int64_t integer(const char* key) const = 0;
  virtual bool boolean(const char* key) const = 0;
  virtual double scalar(const char* key) const = 0;
  virtual std::vector<std::int64_t> integers(const char* key) const = 0;
  // A shape (at most kMaxDims dimensions whose product fits in 64 bits) and a dtype's name;
  // anything else throws tandem::Error naming the key.
  virtual Shape shape(const char* key) const = 0;
  virtual DType dtype(const char* key) const = 0;
  // integer(key) as an int (an axis): a value outside int's range throws tandem::Error naming
  // the key and the value instead of being truncated.
  int int32(const char* key) const {
    const std::int64_t value = integer(key);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
      throw MalformedAttribute(std::string("tandem: attribute '") + key + "': " +
                               std::to_string(value) + " is out of range (it must fit in 32 bits)");
    }
    return static_cast<int>(value);
  }
};

// One call of an op for the tests that iterate the records (tests/frontend/op_records_test.cc):
// each record says how to call its op, so a new record is tested with no test edit.
struct OpExample {
  // What the call shows ("axis 1", "broadcast"), for the test's messages.
  const char* label = "";
  // The inputs on `device`, the same values on every device (the test compares each device's
  // result with the cpu's).
  std::function<std::vector<NDArray>(Device device)> inputs{};
  // The op on those inputs.
  std::function<NDArray(const std::vector<NDArray>& inputs)> run{};
  // The inputs a finite-difference check may perturb (floating, and the op smooth in them at
  // these values); empty: the call gets no gradient check.
  std::vector<int> differentiable{};
};

// An array for an OpExample: `shape` on `device`, values from `seed` spread evenly in
// [low, high) (truncated to integers for an integer dtype), the same on every device.
NDArray example_array(const Shape& shape, Device device, std::uint64_t seed, double low,
                      double high, DType dtype = float64);
// An example of an op of one float64 input of `shape` (values in [low, high)), differentiable in
// it: `run` calls the op.
OpExample example_of_one(const char* label, const Shape& shape,
                         std::function<NDArray(const NDArray&)> run, double low = -1.0,
                         double high = 1.0);

struct OpDefinition {
  // The op's name: its graph node's "op", its autograd node's name.
  const char* name = nullptr;
  // The inputs an imported node must have; -1: any number (the import checks them).
  int num_inputs = 1;
  // The call's attributes (OpCall::attrs) as the graph stores them; null: none.
  void (*write_attrs)(const OpCall& call, OpAttrWriter& out) = nullptr;
  // Runs the op again on an imported node's inputs with its attributes.
  NDArray (*import)(const OpAttrReader& attrs, const std::vector<NDArray>& inputs) = nullptr;
  // The gradient rule of one call, with what it saves: asked only when a mode records and an
  // input needs a gradient. Null: the op has none (its output needs no gradient).
  OpGradient (*gradient)(const OpCall& call) = nullptr;
  // Example calls for the tests (OpExample); every record has at least one.
  std::vector<OpExample> (*examples)() = nullptr;
};

// The attributes an op's invoke passed, as the op's own type.
template <class Attrs>
const Attrs& attrs_of(const OpCall& call) {
  return *static_cast<const Attrs*>(call.attrs);
}

// The records of one op file, found by the graph import through the file's name:
//
//   TANDEM_OP_DEFINITIONS(network, &kSoftmax, &kLogSoftmax, &kSoftmaxCrossEntropy)
//
// at namespace scope in tandem::nd::detail; every file of ops/ has one such line (an empty list
// for a file without records), and graph/graph_ops.cc names every op file once, which also makes
// a program linking the static library link every op an imported graph may name. So a new op in
// an existing op file adds its record to its file's line and touches nothing else.
#define TANDEM_OP_DEFINITIONS(file, ...)                                               \
  std::span<const ::tandem::nd::detail::OpDefinition* const> op_definitions_##file();  \
  std::span<const ::tandem::nd::detail::OpDefinition* const> op_definitions_##file() { \
    static const ::tandem::nd::detail::OpDefinition* const definitions[] = {           \
        __VA_ARGS__ __VA_OPT__(, ) nullptr};                                           \
    return {definitions, std::size(definitions) - 1};                                  \
  }

}  // namespace tandem::nd::detail
