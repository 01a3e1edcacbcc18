// Copies between arrays and devices, dtype conversion, and assignment into an array.
#include <cstring>
#include <string>

#include "core/access.h"
#include "core/checks.h"
#include "core/elementwise_push.h"
#include "core/modes.h"
#include "core/transfer.h"
#include "core/views.h"
#include "tandem/accel/accelerator.h"
#include "tandem/errors.h"
#include "tandem/nd/ndarray.h"

namespace tandem::nd {

namespace {

// A dense array with the source's values on the source's device: what a transfer copies from.
NDArray dense(const NDArray& source) {
  return source.is_contiguous() ? source : source.copy();
}

// `pinned`: the pool of a pinned cpu result (pin_memory); copies from an accelerator to the cpu
// land in pinned memory anyway (detail::pinned_landing).
NDArray copy_as(const NDArray& source, DType dtype, Device device, const char* op,
                MemoryPool* pinned = nullptr) {
  detail::check_defined(op, source);
  if (device != source.device()) detail::check_transfer(op, source.device(), device);
  if (pinned == nullptr) pinned = detail::pinned_landing(source, device);
  NDArray out = detail::allocate_array(source.engine(), source.shape(), dtype, device, op,
                                       detail::FirstWrite::by_op, pinned);
  if (device == source.device()) {
    detail::push_copy(source, out, op);
  } else {
    // copyto keeps the dtype, so only the layout may need a same-device copy first.
    detail::push_transfer(dense(source), out, op);
  }
  // A copy's push is its own (a transfer, a pinned result): it reports with its record here.
  // Inside it, dense(source) is a copy of its own, reported as such.
  if (detail::ops_observed()) {
    const NDArray* inputs[] = {&source};
    detail::report_call(std::strcmp(op, "astype") == 0 ? detail::kAstype : detail::kCopy, inputs,
                        nullptr, out, op);
  }
  return out;
}

void copy_between_devices(const NDArray& source, const NDArray& destination) {
  if (&source.engine() != &destination.engine()) {
    throw Error(
        "tandem: copyto: the arrays belong to different engines; create them under the same "
        "nd::EngineScope");
  }
  detail::check_transfer("copyto", source.device(), destination.device());
  const NDArray from = dense(source);
  if (destination.is_contiguous()) {
    detail::push_transfer(from, destination, "copyto");
    return;
  }
  // A strided destination: land the bytes in a dense array on its device, then scatter there.
  const NDArray landed =
      detail::allocate_array(destination.engine(), destination.shape(), destination.dtype(),
                             destination.device(), "copyto");
  detail::push_transfer(from, landed, "copyto");
  detail::push_copy(landed, destination, "copyto");
}

}  // namespace

NDArray NDArray::copy() const {
  return copy_as(*this, dtype(), device(), "copy");
}

NDArray NDArray::copyto(Device device) const {
  return copy_as(*this, dtype(), device, "copyto");
}

void NDArray::copyto(NDArray destination) const {
  detail::check_defined("copyto", *this);
  detail::check_defined("copyto", destination);
  if (!(destination.shape() == shape())) {
    throw Error("tandem: copyto: the destination has shape " + destination.shape().to_string() +
                ", the source " + shape().to_string() + "; they must match");
  }
  detail::check_same_dtype("copyto", *this, destination);
  detail::note_in_place_write("copyto", destination, this);
  if (destination.device() != device()) return copy_between_devices(*this, destination);
  detail::check_same_place("copyto", {this, &destination});
  const NDArray source = detail::overlaps_differently(*this, destination) ? copy() : *this;
  detail::push_copy(source, destination, "copyto");
}

bool NDArray::is_pinned() const {
  return defined() && detail::NDArrayAccess::storage(*this)->pinned != nullptr;
}

NDArray NDArray::pin_memory() const {
  detail::check_defined("pin_memory", *this);
  if (device().is_accelerator()) {
    throw Error("tandem: pin_memory: the array is on " + to_string(device()) +
                "; only cpu arrays can be pinned (copyto(tandem::cpu()) from an accelerator "
                "returns a pinned array already)");
  }
  if (is_pinned()) return *this;
  return copy_as(*this, dtype(), device(), "pin_memory", &pinned_host_pool());
}

NDArray NDArray::as_in_context(Device device) const {
  detail::check_defined("as_in_context", *this);
  if (device == this->device()) return *this;
  return copyto(device);
}

NDArray NDArray::astype(DType dtype) const {
  return copy_as(*this, dtype, device(), "astype");
}

NDArray& NDArray::assign(const NDArray& source) {
  detail::check_same_place("assign", {this, &source});
  detail::check_same_dtype("assign", *this, source);
  const Shape shape = ops::broadcast_shapes(shape_, source.shape(), "assign");
  if (!(shape == shape_)) {
    throw Error("tandem: assign: a source of shape " + source.shape().to_string() +
                " does not broadcast to the target's shape " + shape_.to_string());
  }
  detail::note_in_place_write("assign", *this, &source);
  const NDArray input = detail::overlaps_differently(*this, source) ? source.copy() : source;
  detail::push_copy(input, *this, "assign");
  return *this;
}

NDArray& NDArray::assign(double value) {
  detail::check_defined("assign", *this);
  detail::note_in_place_write("assign", *this);
  detail::push_fill(*this, value, "assign");
  return *this;
}

}  // namespace tandem::nd
