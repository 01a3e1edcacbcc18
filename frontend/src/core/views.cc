// The views' and copies' records (views.h), the permuting view nd::transpose(x, axes), and the
// example inputs the records' tests use (op_definition.h).
#include "core/views.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/access.h"
#include "core/checks.h"
#include "tandem/errors.h"
#include "tandem/nd/engine_scope.h"
#include "tandem/nd/linalg.h"

namespace tandem::nd {

NDArray transpose(const NDArray& x, const std::vector<int>& axes) {
  detail::check_defined("transpose", x);
  const auto describe = [&] {
    std::string text;
    for (int axis : axes) text += (text.empty() ? "" : ", ") + std::to_string(axis);
    return "(" + text + ")";
  };
  if (static_cast<int>(axes.size()) != x.ndim()) {
    throw Error("tandem: transpose: axes " + describe() + " do not match the " +
                std::to_string(x.ndim()) + " dimensions of shape " + x.shape().to_string());
  }
  bool seen[ops::kMaxDims] = {};
  Shape shape;
  Strides strides{};
  for (int axis : axes) {
    const int a = ops::normalize_axis(axis, x.shape(), "transpose");
    if (seen[a]) throw Error("tandem: transpose: axes " + describe() + " repeat an axis");
    seen[a] = true;
    strides[static_cast<std::size_t>(shape.ndim())] = x.strides()[static_cast<std::size_t>(a)];
    shape.push_back(x.shape()[a]);
  }
  NDArray out = detail::NDArrayAccess::make(detail::NDArrayAccess::storage(x), x.dtype(), shape,
                                            strides, detail::NDArrayAccess::offset(x));
  const detail::TransposeAttrs attrs{axes};
  detail::report_view(detail::kTranspose, {&x}, &attrs, out);
  return out;
}

namespace detail {

NDArray example_array(const Shape& shape, Device device, std::uint64_t seed, double low,
                      double high, DType dtype) {
  // splitmix64: the same values on every device and platform.
  std::vector<double> values(static_cast<std::size_t>(shape.num_elements()));
  std::uint64_t state = seed;
  for (double& value : values) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    value = low + (high - low) * static_cast<double>(z >> 11) * 0x1.0p-53;
    if (!ops::is_floating(dtype)) value = static_cast<double>(static_cast<std::int64_t>(value));
  }
  NDArray host = allocate_array(current_engine(), shape, float64, cpu(), "example_array",
                                FirstWrite::by_caller);
  if (!values.empty()) std::memcpy(host.view().data, values.data(), values.size() * sizeof(double));
  NDArray typed = dtype == float64 ? host : host.astype(dtype);
  return device == cpu() ? typed : typed.copyto(device);
}

OpExample example_of_one(const char* label, const Shape& shape,
                         std::function<NDArray(const NDArray&)> run, double low, double high) {
  return OpExample{
      .label = label,
      .inputs =
          [shape, low, high](Device d) {
            return std::vector<NDArray>{example_array(shape, d, 23, low, high)};
          },
      .run = [run = std::move(run)](const std::vector<NDArray>& in) { return run(in[0]); },
      .differentiable = {0}};
}

namespace {

// Whether autograd records a gradient through a view or copy of x into out.
bool differentiable(const OpCall& c) {
  return ops::is_floating(c.input(0).dtype()) && ops::is_floating(c.out->dtype());
}

NDArray zeros_on(const NDArray& like, const Shape& shape) {
  NDArray zeros = allocate_array(like.engine(), shape, like.dtype(), like.device(), "backward");
  zeros.assign(0.0);
  return zeros;
}

std::vector<int> ints_of(const std::vector<std::int64_t>& values, const char* key) {
  if (values.size() > static_cast<std::size_t>(ops::kMaxDims)) {
    throw MalformedAttribute(std::string("tandem: ") + key + ": expected at most " +
                             std::to_string(ops::kMaxDims) + " integers, got " +
                             std::to_string(values.size()));
  }
  std::vector<int> ints;
  for (std::int64_t value : values) {
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
      throw MalformedAttribute(std::string("tandem: attribute '") + key + "': " +
                               std::to_string(value) + " is out of range (it must fit in 32 bits)");
    }
    ints.push_back(static_cast<int>(value));
  }
  return ints;
}

std::vector<OpExample> one_input(const char* label, const Shape& shape,
                                 std::function<NDArray(const NDArray&)> run) {
  return {example_of_one(label, shape, std::move(run))};
}

// reshape: the output's shape, and whether it kept axis 0 (flatten, Dense's input), which
// then follows the input's batch size on import.
void write_reshape(const OpCall& c, OpAttrWriter& w) {
  const NDArray& x = c.input(0);
  const NDArray& out = *c.out;
  w.shape("shape", out.shape());
  w.boolean("keep_axis0", x.ndim() > 0 && out.ndim() > 0 && x.shape()[0] == out.shape()[0]);
}

NDArray import_reshape(const OpAttrReader& r, const std::vector<NDArray>& in) {
  Shape shape = r.shape("shape");
  if (r.boolean("keep_axis0") && in[0].ndim() > 0 && shape.ndim() > 0) shape[0] = in[0].shape()[0];
  return in[0].reshape(shape);
}

OpGradient reshape_gradient(const OpCall& c) {
  if (!differentiable(c)) return {};
  return {.inputs = {c.input(0)},
          .rule = [shape = c.input(0).shape()](const std::vector<NDArray>& g,
                                               const std::vector<NDArray>&) {
            return std::vector<NDArray>{g[0].reshape(shape)};
          }};
}

void write_slice(const OpCall& c, OpAttrWriter& w) {
  const SliceAttrs& a = attrs_of<SliceAttrs>(c);
  w.integer("begin", a.begin);
  w.integer("end", a.end);
  w.integer("step", a.step);
}

NDArray import_slice(const OpAttrReader& r, const std::vector<NDArray>& in) {
  return in[0].slice(r.integer("begin"), r.integer("end"), r.integer("step"));
}

OpGradient slice_gradient(const OpCall& c) {
  if (!differentiable(c)) return {};
  const SliceAttrs& a = attrs_of<SliceAttrs>(c);
  return {.inputs = {c.input(0)},
          .rule = [shape = c.input(0).shape(), begin = a.begin, step = a.step,
                   rows = c.out->shape()[0]](const std::vector<NDArray>& g,
                                             const std::vector<NDArray>&) {
            NDArray gx = zeros_on(g[0], shape);
            gx.slice(begin, begin + rows * step, step).assign(g[0]);
            return std::vector<NDArray>{gx};
          }};
}

void write_index(const OpCall& c, OpAttrWriter& w) {
  w.integer("index", attrs_of<IndexAttrs>(c).index);
}

NDArray import_index(const OpAttrReader& r, const std::vector<NDArray>& in) {
  return in[0][r.integer("index")];
}

OpGradient index_gradient(const OpCall& c) {
  if (!differentiable(c)) return {};
  return {.inputs = {c.input(0)},
          .rule = [shape = c.input(0).shape(), index = attrs_of<IndexAttrs>(c).index](
                      const std::vector<NDArray>& g, const std::vector<NDArray>&) {
            NDArray gx = zeros_on(g[0], shape);
            gx[index].assign(g[0]);
            return std::vector<NDArray>{gx};
          }};
}

void write_transpose(const OpCall& c, OpAttrWriter& w) {
  const std::span<const int> axes = attrs_of<TransposeAttrs>(c).axes;
  const std::vector<std::int64_t> values(axes.begin(), axes.end());
  w.integers("axes", values);
}

NDArray import_transpose(const OpAttrReader& r, const std::vector<NDArray>& in) {
  return transpose(in[0], ints_of(r.integers("axes"), "axes"));
}

OpGradient transpose_gradient(const OpCall& c) {
  if (!differentiable(c)) return {};
  const std::span<const int> given = attrs_of<TransposeAttrs>(c).axes;
  const std::vector<int> axes(given.begin(), given.end());
  // Output axis i is input axis axes[i]: the gradient goes back through the inverse permutation.
  const int ndim = c.input(0).ndim();
  std::vector<int> inverse(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const int axis = axes[i] < 0 ? axes[i] + ndim : axes[i];
    inverse[static_cast<std::size_t>(axis)] = static_cast<int>(i);
  }
  return {.inputs = {c.input(0)},
          .rule =
              [inverse](const std::vector<NDArray>& g, const std::vector<NDArray>&) {
                return std::vector<NDArray>{transpose(g[0], inverse)};
              },
          // The output is x's memory seen through `axes`: a buffer shaped like x seen the same
          // way.
          .same_view_of =
              [axes](const NDArray& input_shaped) { return transpose(input_shaped, axes); }};
}

// copy, copyto, pin_memory and astype: the gradient is the output gradient converted back to
// the input's dtype and device.
OpGradient copy_gradient(const OpCall& c) {
  if (!differentiable(c)) return {};
  return {.inputs = {c.input(0)},
          .rule = [dtype = c.input(0).dtype(), device = c.input(0).device()](
                      const std::vector<NDArray>& g, const std::vector<NDArray>&) {
            NDArray gx = g[0];
            if (gx.dtype() != dtype) gx = gx.astype(dtype);
            if (gx.device() != device) gx = gx.copyto(device);
            return std::vector<NDArray>{gx};
          }};
}

void write_astype(const OpCall& c, OpAttrWriter& w) {
  w.dtype("dtype", c.out->dtype());
}

NDArray import_astype(const OpAttrReader& r, const std::vector<NDArray>& in) {
  return in[0].astype(r.dtype("dtype"));
}

}  // namespace

const OpDefinition kReshape{.name = "reshape",
                            .write_attrs = write_reshape,
                            .import = import_reshape,
                            .gradient = reshape_gradient,
                            .examples = [] {
                              return one_input("(2, 6) to (3, 4)", Shape{2, 6},
                                               [](const NDArray& x) {
                                                 return x.reshape(Shape{3, 4});
                                               });
                            }};

const OpDefinition kSlice{.name = "slice",
                          .write_attrs = write_slice,
                          .import = import_slice,
                          .gradient = slice_gradient,
                          .examples = [] {
                            return one_input("rows 1:5:2", Shape{5, 3},
                                             [](const NDArray& x) { return x.slice(1, 5, 2); });
                          }};

const OpDefinition kIndex{
    .name = "index",
    .write_attrs = write_index,
    .import = import_index,
    .gradient = index_gradient,
    .examples = [] {
      return one_input("row 2", Shape{4, 3}, [](const NDArray& x) { return x[2]; });
    }};

const OpDefinition kTranspose{
    .name = "transpose",
    .write_attrs = write_transpose,
    .import = import_transpose,
    .gradient = transpose_gradient,
    .examples = [] {
      std::vector<OpExample> examples =
          one_input("axes (2, 0, 1)", Shape{2, 3, 4}, [](const NDArray& x) {
            return transpose(x, std::vector<int>{2, 0, 1});
          });
      examples.push_back(
          one_input("T()", Shape{3, 5}, [](const NDArray& x) { return x.T(); }).front());
      return examples;
    }};

const OpDefinition kCopy{
    .name = "copy",
    .import = [](const OpAttrReader&, const std::vector<NDArray>& in) { return in[0].copy(); },
    .gradient = copy_gradient,
    .examples =
        [] {
          return one_input("strided", Shape{4, 3}, [](const NDArray& x) { return x.T().copy(); });
        }};

const OpDefinition kAstype{.name = "astype",
                           .write_attrs = write_astype,
                           .import = import_astype,
                           .gradient = copy_gradient,
                           .examples = [] {
                             std::vector<OpExample> examples = one_input(
                                 "to float32 and back", Shape{3, 4}, [](const NDArray& x) {
                                   return x.astype(float32).astype(float64);
                                 });
                             // Not differentiable through the rounding to float32 at
                             // finite-difference steps.
                             examples.front().differentiable.clear();
                             return examples;
                           }};

TANDEM_OP_DEFINITIONS(views, &kReshape, &kSlice, &kIndex, &kTranspose, &kCopy, &kAstype)

}  // namespace detail

}  // namespace tandem::nd
