// Gradient rules of the views (reshape, slice, operator[], transposes), of the copies between
// dtypes and devices, and of concat.
#include <numeric>

#include "autograd/record.h"
#include "autograd/tape.h"
#include "core/access.h"
#include "tandem/nd/linalg.h"

namespace tandem::autograd::detail {

using nd::NDArray;
using nd::Shape;

namespace {

NDArray zeros_on(const NDArray& like, const Shape& shape) {
  NDArray zeros =
      nd::detail::allocate_array(like.engine(), shape, like.dtype(), like.device(), "backward");
  zeros.assign(0.0);
  return zeros;
}

bool recordable(const NDArray& x) {
  return ops::is_floating(x.dtype()) && needs_grad(x);
}

}  // namespace

void record_reshape(const NDArray& x, NDArray& out) {
  if (!recordable(x)) return;
  const Shape shape = x.shape();
  record_node("reshape", {x}, {&out}, {}, [shape](const std::vector<NDArray>& g) {
    return std::vector<NDArray>{g[0].reshape(shape)};
  });
}

void record_slice(const NDArray& x, std::int64_t begin, std::int64_t step, NDArray& out) {
  if (!recordable(x)) return;
  const Shape shape = x.shape();
  const std::int64_t rows = out.shape()[0];
  record_node("slice", {x}, {&out}, {}, [shape, begin, step, rows](const std::vector<NDArray>& g) {
    NDArray gx = zeros_on(g[0], shape);
    gx.slice(begin, begin + rows * step, step).assign(g[0]);
    return std::vector<NDArray>{gx};
  });
}

void record_index(const NDArray& x, std::int64_t index, NDArray& out) {
  if (!recordable(x)) return;
  const Shape shape = x.shape();
  record_node("operator[]", {x}, {&out}, {}, [shape, index](const std::vector<NDArray>& g) {
    NDArray gx = zeros_on(g[0], shape);
    gx[index].assign(g[0]);
    return std::vector<NDArray>{gx};
  });
}

void record_transpose(const NDArray& x, const std::vector<int>& axes, NDArray& out) {
  if (!recordable(x)) return;
  // Output axis i is input axis axes[i]: the gradient goes back through the inverse permutation.
  std::vector<int> inverse(axes.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const int axis = axes[i] < 0 ? axes[i] + x.ndim() : axes[i];
    inverse[static_cast<std::size_t>(axis)] = static_cast<int>(i);
  }
  record_node("transpose", {x}, {&out}, {}, [inverse](const std::vector<NDArray>& g) {
    return std::vector<NDArray>{nd::transpose(g[0], inverse)};
  });
  // The output is x's memory seen through `axes`: a buffer shaped like x seen the same way.
  nd::detail::NDArrayAccess::grad_node(out)->same_view_of = [axes](const NDArray& input_shaped) {
    return nd::transpose(input_shaped, axes);
  };
}

void record_copy(const char* op, const NDArray& x, NDArray& out) {
  if (!recordable(x) || !ops::is_floating(out.dtype())) return;
  const nd::DType dtype = x.dtype();
  const Device device = x.device();
  record_node(op, {x}, {&out}, {}, [dtype, device](const std::vector<NDArray>& g) {
    NDArray gx = g[0];
    if (gx.dtype() != dtype) gx = gx.astype(dtype);
    if (gx.device() != device) gx = gx.copyto(device);
    return std::vector<NDArray>{gx};
  });
}

void record_concat(const std::vector<NDArray>& arrays, int axis, NDArray& out) {
  if (!ops::is_floating(out.dtype()) || !should_record(arrays)) return;
  axis = ops::normalize_axis(axis, out.shape(), "concat");
  std::vector<std::int64_t> lengths;
  std::vector<bool> needed;
  for (const NDArray& array : arrays) {
    lengths.push_back(array.shape()[axis]);
    needed.push_back(needs_grad(array));
  }
  record_node("concat", arrays, {&out}, {}, [axis, lengths, needed](const std::vector<NDArray>& g) {
    // Axis `axis` to the front, slice the rows of each input, and back.
    std::vector<int> swap(static_cast<std::size_t>(g[0].ndim()));
    std::iota(swap.begin(), swap.end(), 0);
    std::swap(swap[0], swap[static_cast<std::size_t>(axis)]);
    const NDArray front = nd::transpose(g[0], swap);
    std::vector<NDArray> grads;
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      grads.push_back(needed[i] ? nd::transpose(front.slice(offset, offset + lengths[i]), swap)
                                : NDArray());
      offset += lengths[i];
    }
    return grads;
  });
}

}  // namespace tandem::autograd::detail
