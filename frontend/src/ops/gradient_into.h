// Where an own-rule op's kernel writes an input's gradient when backward offers a destination
// (core/modes.h, GradientDestination: the gradient buffer of the leaf the input is): the
// buffer itself when the gradient overwrites it (grad_req write), or a fresh array added into
// the buffer by the same op right after the kernel (grad_req add). Either way the assign or add
// that backward would queue after the rule is gone: one op less per parameter and step.
//
//   GradientOutput dw = gradient_output(destinations, 1, engine, w_shape, dtype, device, op);
//   ... push one op whose kernel writes dw.array; its writes add dw.add_into's var,
//   ... and after the kernel: add_formed_gradients(kernels, stream, {&dw_add});
//   result[1] = dw.result();
//
// The add is the binary_dense add kernel `leaf.grad += gradient` runs, on the same values in the
// same order (grad + gradient): the buffer's bits are those of the assign or add path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/lazy_view.h"
#include "core/modes.h"
#include "tandem/nd/ndarray.h"
#include "tandem/ops/op_kinds.h"

namespace tandem::ops {
struct Kernels;
}
namespace tandem {
class Stream;
}

namespace tandem::nd::detail {

struct GradientOutput {
  NDArray array;     // what the kernel writes
  NDArray add_into;  // defined: the buffer to add `array` into after the kernel (grad_req add)
  GradientDestination* destination = nullptr;  // the destination used, or none

  // What the rule returns for this input: undefined when the destination receives it.
  NDArray result() const { return destination != nullptr ? NDArray() : array; }
  // Marks the destination written: call once the op is queued.
  void queued() const {
    if (destination != nullptr) destination->written = true;
  }
};

// The destination offered for `input` when a kernel writing a dense array of this shape, dtype,
// device and engine can use it (its buffer is dense and matches), else null.
GradientDestination* usable_destination(std::vector<GradientDestination>& destinations,
                                        std::size_t input, Engine& engine, const Shape& shape,
                                        DType dtype, Device device);

// The array the kernel writes input `input`'s gradient into: the destination's buffer
// (overwritten), a fresh array to add into it (accumulated), or a fresh array with no
// destination (`destinations` may be empty).
GradientOutput gradient_output(std::vector<GradientDestination>& destinations, std::size_t input,
                               Engine& engine, const Shape& shape, DType dtype, Device device,
                               const char* op);

// A formed gradient and the buffer it is added into, as an op captures them.
struct GradientAdd {
  DenseRef buffer;
  DenseRef formed;
  DType dtype = DType::float32;
  std::int64_t size = 0;
};

// The adds of an op's accumulated outputs (none when no output accumulates).
std::vector<GradientAdd> gradient_adds(std::initializer_list<const GradientOutput*> outputs);

// The vars an op writes for these outputs: each array's, and each accumulated buffer's.
std::vector<Var> gradient_writes(std::initializer_list<const GradientOutput*> outputs);

// Runs the adds (buffer = buffer + formed), in the op, after its kernel.
void add_formed_gradients(const ops::Kernels& kernels, Stream* stream,
                          const std::vector<GradientAdd>& adds);

// out = op over `axis` of x, as push_reduce_axis (core/op_push.h) queues it, into a gradient
// output: the last reduction of a broadcast input's or a bias's gradient. Marks it queued.
void push_reduce_axis_into(ops::ReduceOp op, const NDArray& x, int axis, const GradientOutput& out);

}  // namespace tandem::nd::detail
