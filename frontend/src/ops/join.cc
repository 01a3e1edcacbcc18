// concat: one op that copies every input into its slab of the output. stack and split are
// made of the ops that autograd and export already know (reshape and concat; transposes and
// slices, which are views), so their gradients and their graph nodes come from those.
#include "tandem/nd/join.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/lazy_view.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "core/op_push.h"
#include "tandem/errors.h"
#include "tandem/nd/linalg.h"

namespace tandem::nd {

NDArray concat(const std::vector<NDArray>& arrays, int axis) {
  if (arrays.empty()) throw Error("tandem: concat: needs at least one array");
  const NDArray& first = arrays.front();
  detail::check_defined("concat", first);
  axis = ops::normalize_axis(axis, first.shape(), "concat");
  Shape shape = first.shape();
  shape[axis] = 0;
  std::vector<Var> reads;
  for (const NDArray& array : arrays) {
    detail::check_same_place("concat", {&first, &array});
    detail::check_same_dtype("concat", first, array);
    const Shape& s = array.shape();
    bool compatible = s.ndim() == first.ndim();
    for (int i = 0; compatible && i < s.ndim(); ++i)
      compatible = i == axis || s[i] == first.shape()[i];
    if (!compatible) {
      throw Error("tandem: concat: shapes " + first.shape().to_string() + " and " + s.to_string() +
                  " differ outside axis " + std::to_string(axis));
    }
    shape[axis] += s[axis];
    reads.push_back(array.var());
  }
  NDArray out =
      detail::allocate_array(first.engine(), shape, first.dtype(), first.device(), "concat");
  // Each input goes to the slab of the output that starts at its offset along `axis`.
  std::vector<std::pair<detail::LazyView, detail::LazyView>> copies;
  const detail::LazyView whole = detail::lazy_view(out);
  std::int64_t offset = 0;
  for (const NDArray& array : arrays) {
    detail::LazyView slab = whole;
    slab.layout.shape[axis] = array.shape()[axis];
    slab.offset += offset * whole.layout.strides[static_cast<std::size_t>(axis)];
    copies.emplace_back(detail::lazy_view(array), slab);
    offset += array.shape()[axis];
  }
  detail::push_copies(std::move(copies), reads, out, "concat");
  if (detail::ops_observed()) {
    detail::OpCall call(detail::OpForm::concat, "concat");
    call.arrays = &arrays;
    call.axis = axis;
    call.out = &out;
    detail::report_op(call);
  }
  return out;
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

namespace detail {
// No op of this file has a record yet (core/op_definition.h).
TANDEM_OP_DEFINITIONS(join)
}  // namespace detail

}  // namespace tandem::nd
