// concat: one op that copies every input into its slab of the output.
#include "tandem/nd/join.h"

#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/lazy_view.h"
#include "core/modes.h"
#include "core/op_push.h"
#include "tandem/errors.h"

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

}  // namespace tandem::nd
