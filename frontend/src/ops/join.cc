// concat: one op that copies every input into its slab of the output. stack and split are
// made of the ops that autograd and export already know (reshape and concat; transposes and
// slices, which are views), so their gradients and their graph nodes come from those. take:
// one op (the take kernel family) with its record (core/op_definition.h): its gradient is one
// take_backward op, a scatter-add.
#include "tandem/nd/join.h"

#include <numeric>
#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/invoke.h"
#include "core/lazy_view.h"
#include "core/op_definition.h"
#include "core/op_push.h"
#include "core/view_op.h"
#include "tandem/errors.h"
#include "tandem/nd/linalg.h"

namespace tandem::nd {

namespace {

struct ConcatAttrs {
  int axis;  // normalized
};

// concat's rule: each input's gradient is its slab of the output gradient (axis `axis` to the
// front, the input's rows sliced, and back), for the inputs that need one.
detail::OpGradient concat_gradient(const detail::OpCall& c) {
  if (!ops::is_floating(c.out->dtype())) return {};
  const int axis = detail::attrs_of<ConcatAttrs>(c).axis;
  detail::OpGradient gradient;
  std::vector<std::int64_t> lengths;
  std::vector<bool> needed;
  for (std::size_t i = 0; i < c.input_count; ++i) {
    gradient.inputs.push_back(c.input(i));
    lengths.push_back(c.input(i).shape()[axis]);
    needed.push_back(c.needs_gradient(i));
  }
  gradient.rule = [axis, lengths, needed](const std::vector<NDArray>& g,
                                          const std::vector<NDArray>&) {
    std::vector<int> swap(static_cast<std::size_t>(g[0].ndim()));
    std::iota(swap.begin(), swap.end(), 0);
    std::swap(swap[0], swap[static_cast<std::size_t>(axis)]);
    const NDArray front = transpose(g[0], swap);
    std::vector<NDArray> grads;
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      grads.push_back(needed[i] ? transpose(front.slice(offset, offset + lengths[i]), swap)
                                : NDArray());
      offset += lengths[i];
    }
    return grads;
  };
  return gradient;
}

std::vector<detail::OpExample> concat_examples() {
  const auto three = [](const char* label, int axis, Shape a, Shape b, Shape c) {
    return detail::OpExample{
        .label = label,
        .inputs =
            [a, b, c](Device d) {
              return std::vector<NDArray>{detail::example_array(a, d, 1, -1.0, 1.0),
                                          detail::example_array(b, d, 2, -1.0, 1.0),
                                          detail::example_array(c, d, 3, -1.0, 1.0)};
            },
        .run = [axis](const std::vector<NDArray>& in) { return concat(in, axis); },
        .differentiable = {0, 1, 2}};
  };
  return {three("three arrays, axis 0", 0, {2, 3}, {1, 3}, {3, 3}),
          three("three arrays, axis -1", -1, {2, 1}, {2, 3}, {2, 2})};
}

const detail::OpDefinition kConcat{
    .name = "concat",
    .num_inputs = -1,
    .write_attrs =
        [](const detail::OpCall& c, detail::OpAttrWriter& out) {
          out.integer("axis", detail::attrs_of<ConcatAttrs>(c).axis);
        },
    .import = [](const detail::OpAttrReader& attrs,
                 const std::vector<NDArray>& in) { return concat(in, attrs.int32("axis")); },
    .gradient = concat_gradient,
    .examples = concat_examples};

}  // namespace

NDArray concat(const std::vector<NDArray>& arrays, int axis) {
  if (arrays.empty()) throw Error("tandem: concat: needs at least one array");
  std::vector<const NDArray*> inputs;
  inputs.reserve(arrays.size());
  for (const NDArray& array : arrays) inputs.push_back(&array);
  ConcatAttrs attrs{axis};
  std::vector<Var> reads;
  return detail::invoke_inputs(
      kConcat, inputs, &attrs, nullptr,
      [&] {
        const NDArray& first = arrays.front();
        detail::check_defined("concat", first);
        attrs.axis = ops::normalize_axis(axis, first.shape(), "concat");
        Shape shape = first.shape();
        shape[attrs.axis] = 0;
        for (const NDArray& array : arrays) {
          detail::check_same_place("concat", {&first, &array});
          detail::check_same_dtype("concat", first, array);
          const Shape& s = array.shape();
          bool compatible = s.ndim() == first.ndim();
          for (int i = 0; compatible && i < s.ndim(); ++i)
            compatible = i == attrs.axis || s[i] == first.shape()[i];
          if (!compatible) {
            throw Error("tandem: concat: shapes " + first.shape().to_string() + " and " +
                        s.to_string() + " differ outside axis " + std::to_string(attrs.axis));
          }
          shape[attrs.axis] += s[attrs.axis];
          reads.push_back(array.var());
        }
        return detail::OpPlan{&first.engine(), shape, first.dtype(), first.device()};
      },
      [&](detail::OpOutput& o) {
        // Each input goes to the slab of the output that starts at its offset along `axis`.
        std::vector<std::pair<detail::LazyView, detail::LazyView>> copies;
        const detail::LazyView whole = detail::lazy_view(o.out);
        const auto along = static_cast<std::size_t>(attrs.axis);
        std::int64_t offset = 0;
        for (const NDArray& array : arrays) {
          detail::LazyView slab = whole;
          slab.layout.shape[attrs.axis] = array.shape()[attrs.axis];
          slab.offset += offset * whole.layout.strides[along];
          copies.emplace_back(detail::lazy_view(array), slab);
          offset += array.shape()[attrs.axis];
        }
        detail::push_copies(std::move(copies), reads, o.out, "concat");
      });
}

NDArray stack(const std::vector<NDArray>& arrays, int axis) {
  if (arrays.empty()) throw Error("tandem: stack: needs at least one array");
  const NDArray& first = arrays.front();
  detail::check_defined("stack", first);
  const int ndim = first.ndim();
  if (ndim + 1 > ops::kMaxDims) {
    throw Error("tandem: stack: arrays of shape " + first.shape().to_string() + " have " +
                std::to_string(ndim) + " dimensions; stacking adds one, past the limit of " +
                std::to_string(ops::kMaxDims));
  }
  if (axis < -(ndim + 1) || axis > ndim) {
    throw Error("tandem: stack: axis " + std::to_string(axis) + " is out of range for arrays of " +
                std::to_string(ndim) + " dimensions (shape " + first.shape().to_string() +
                "): the new axis must be in [" + std::to_string(-(ndim + 1)) + ", " +
                std::to_string(ndim) + "]");
  }
  if (axis < 0) axis += ndim + 1;
  Shape expanded;
  for (int i = 0; i <= ndim; ++i) expanded.push_back(i == axis ? 1 : first.shape()[i - (i > axis)]);
  std::vector<NDArray> parts;
  parts.reserve(arrays.size());
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const NDArray& array = arrays[i];
    detail::check_same_place("stack", {&first, &array});
    detail::check_same_dtype("stack", first, array);
    if (array.shape() != first.shape()) {
      throw Error("tandem: stack: every array must have the same shape; array 0 has shape " +
                  first.shape().to_string() + ", array " + std::to_string(i) + " has shape " +
                  array.shape().to_string());
    }
    parts.push_back(array.reshape(expanded));
  }
  return concat(parts, axis);
}

std::vector<NDArray> split(const NDArray& x, int sections, int axis) {
  detail::check_defined("split", x);
  if (x.ndim() == 0) throw Error("tandem: split: a 0-d array has no axis to split");
  axis = ops::normalize_axis(axis, x.shape(), "split");
  const std::int64_t length = x.shape()[axis];
  if (sections < 1 || length % sections != 0) {
    throw Error("tandem: split: axis " + std::to_string(axis) + " of shape " +
                x.shape().to_string() + " (size " + std::to_string(length) +
                ") cannot be split into " + std::to_string(sections) +
                " equal sections; sections must be >= 1 and divide the axis");
  }
  // Each section is a view: the axis moved to the front, a slice, and moved back.
  std::vector<int> to_front{axis};
  for (int i = 0; i < x.ndim(); ++i)
    if (i != axis) to_front.push_back(i);
  std::vector<int> back(static_cast<std::size_t>(x.ndim()));  // the inverse permutation
  for (int i = 0; i < x.ndim(); ++i) back[static_cast<std::size_t>(to_front[i])] = i;
  const NDArray front = axis == 0 ? x : transpose(x, to_front);
  const std::int64_t size = length / sections;
  std::vector<NDArray> pieces;
  pieces.reserve(static_cast<std::size_t>(sections));
  for (int i = 0; i < sections; ++i) {
    const NDArray piece = front.slice(i * size, (i + 1) * size);
    pieces.push_back(axis == 0 ? piece : transpose(piece, back));
  }
  return pieces;
}

namespace {

// A dense array seen as (outer, middle, inner), or as a 1-d list of its elements (middle only).
detail::LazyView dense_3d(const NDArray& array, std::int64_t outer, std::int64_t middle,
                          std::int64_t inner) {
  detail::LazyView view = detail::lazy_view(array);
  view.layout.shape = Shape{outer, middle, inner};
  view.layout.strides = {middle * inner, inner, 1};
  return view;
}

detail::LazyView dense_list(const NDArray& array) {
  detail::LazyView view = detail::lazy_view(array);
  view.layout.shape = Shape{array.size()};
  view.layout.strides = {1};
  return view;
}

NDArray dense(const NDArray& array) {
  return array.is_contiguous() ? array : array.copy();
}

// The sizes before `axis`, along it, and after it.
struct AxisSplit {
  std::int64_t outer = 1, length = 0, inner = 1;
};

AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit split;
  for (int i = 0; i < axis; ++i) split.outer *= shape[i];
  split.length = shape[axis];
  for (int i = axis + 1; i < shape.ndim(); ++i) split.inner *= shape[i];
  return split;
}

// dx (x_shape, zeros where no index points) = the sum of dy's rows into the rows of x that
// `indices` picked: take's gradient, one op (the take_backward kernel).
NDArray take_backward(const NDArray& dy, const NDArray& indices, const Shape& x_shape, int axis) {
  const char* op = "take_backward";
  const NDArray g = dense(dy), list = dense(indices);
  const AxisSplit split = split_at(x_shape, axis);
  NDArray dx = detail::allocate_array(g.engine(), x_shape, g.dtype(), g.device(), op);
  detail::push_view_op<3>(g.engine(), dx.device(), op,
                          {dense_3d(g, split.outer, list.size(), split.inner), dense_list(list),
                           dense_3d(dx, split.outer, split.length, split.inner)},
                          {g.var(), list.var()}, {dx.var()},
                          [axis](const ops::Kernels& k, Stream* s, const auto& v) {
                            k.take_backward(s, v[0], v[1], v[2], axis);
                          });
  return dx;
}

struct TakeAttrs {
  int axis;  // normalized
};

// take's rule: the output gradient scattered (added) back into the rows it was taken from.
detail::OpGradient take_gradient(const detail::OpCall& c) {
  const NDArray &x = *c.inputs[0], &indices = *c.inputs[1];
  detail::OpGradient gradient;
  gradient.inputs = {x, indices};
  gradient.saved = {indices};
  gradient.rule = [shape = x.shape(), axis = detail::attrs_of<TakeAttrs>(c).axis](
                      const std::vector<NDArray>& g, const std::vector<NDArray>& saved) {
    return std::vector<NDArray>{take_backward(g[0], saved[0], shape, axis), NDArray()};
  };
  return gradient;
}

const detail::OpDefinition kTake{
    .name = "take",
    .num_inputs = 2,
    .write_attrs =
        [](const detail::OpCall& c, detail::OpAttrWriter& out) {
          out.integer("axis", detail::attrs_of<TakeAttrs>(c).axis);
        },
    .import =
        [](const detail::OpAttrReader& attrs, const std::vector<NDArray>& in) {
          return take(in[0], in[1], attrs.int32("axis"));
        },
    .gradient = take_gradient,
    .examples =
        [] {
          // Indices that repeat (their gradients add up), along each axis.
          const auto example = [](const char* label, int axis) {
            return detail::OpExample{
                .label = label,
                .inputs =
                    [](Device d) {
                      return std::vector<NDArray>{
                          detail::example_array({3, 3}, d, 61, -1.0, 1.0),
                          detail::example_array({2, 3}, d, 62, 0.0, 3.0, int64)};
                    },
                .run = [axis](const std::vector<NDArray>& in) { return take(in[0], in[1], axis); },
                .differentiable = {0}};
          };
          return std::vector<detail::OpExample>{example("axis 0", 0), example("axis 1", 1)};
        }};

}  // namespace

namespace detail {
TANDEM_OP_DEFINITIONS(join, &kConcat, &kTake)
}  // namespace detail

NDArray take(const NDArray& x, const NDArray& indices, int axis) {
  const char* op = "take";
  TakeAttrs attrs{axis};
  AxisSplit split;
  return detail::invoke(
      kTake, {&x, &indices}, &attrs,
      [&] {
        Engine& engine = detail::check_same_place(op, {&x, &indices});
        if (indices.dtype() != int32 && indices.dtype() != int64) {
          throw Error(std::string("tandem: take: indices must be int32 or int64, got ") +
                      dtype_name(indices.dtype()) + " (shape " + indices.shape().to_string() +
                      "); astype(int64) first");
        }
        if (x.ndim() == 0) throw Error("tandem: take: a 0-d array has no axis to take along");
        attrs.axis = ops::normalize_axis(axis, x.shape(), op);
        const int ndim = x.ndim() - 1 + indices.ndim();
        if (ndim > ops::kMaxDims) {
          throw Error("tandem: take: the result of x of shape " + x.shape().to_string() +
                      " and indices of shape " + indices.shape().to_string() + " would have " +
                      std::to_string(ndim) + " dimensions, past the limit of " +
                      std::to_string(ops::kMaxDims));
        }
        Shape shape;
        for (int i = 0; i < attrs.axis; ++i) shape.push_back(x.shape()[i]);
        for (int i = 0; i < indices.ndim(); ++i) shape.push_back(indices.shape()[i]);
        for (int i = attrs.axis + 1; i < x.ndim(); ++i) shape.push_back(x.shape()[i]);
        split = split_at(x.shape(), attrs.axis);
        return detail::OpPlan{&engine, shape, x.dtype(), x.device()};
      },
      [&](detail::OpOutput& o) {
        const NDArray values = dense(x), list = dense(indices);  // the op's own copies
        detail::push_view_op<3>(
            o.out.engine(), o.out.device(), op,
            {dense_3d(values, split.outer, split.length, split.inner), dense_list(list),
             dense_3d(o.out, split.outer, list.size(), split.inner)},
            {values.var(), list.var()}, {o.out.var()},
            [axis = attrs.axis](const ops::Kernels& k, Stream* s, const auto& v) {
              k.take(s, v[0], v[1], v[2], axis);
            });
      });
}

}  // namespace tandem::nd
