// Gradient outputs of own-rule ops written into leaves' gradient buffers (gradient_into.h).
#include "ops/gradient_into.h"

#include "core/access.h"
#include "core/kernels.h"

namespace tandem::nd::detail {

GradientDestination* usable_destination(std::vector<GradientDestination>& destinations,
                                        std::size_t input, Engine& engine, const Shape& shape,
                                        DType dtype, Device device) {
  if (input >= destinations.size()) return nullptr;
  GradientDestination& destination = destinations[input];
  const NDArray& buffer = destination.buffer;
  if (!buffer.defined() || destination.written) return nullptr;
  if (!(buffer.shape() == shape) || buffer.dtype() != dtype || buffer.device() != device ||
      &buffer.engine() != &engine || !buffer.is_contiguous()) {
    return nullptr;
  }
  return &destination;
}

GradientOutput gradient_output(std::vector<GradientDestination>& destinations, std::size_t input,
                               Engine& engine, const Shape& shape, DType dtype, Device device,
                               const char* op) {
  GradientOutput output;
  output.destination = usable_destination(destinations, input, engine, shape, dtype, device);
  if (output.destination != nullptr && !output.destination->add) {
    output.array = output.destination->buffer;
    return output;
  }
  output.array = allocate_array(engine, shape, dtype, device, op);
  if (output.destination != nullptr) output.add_into = output.destination->buffer;
  return output;
}

std::vector<GradientAdd> gradient_adds(std::initializer_list<const GradientOutput*> outputs) {
  std::vector<GradientAdd> adds;
  for (const GradientOutput* output : outputs) {
    if (output == nullptr || !output->add_into.defined()) continue;
    adds.push_back(GradientAdd{dense_ref(output->add_into), dense_ref(output->array),
                               output->array.dtype(), output->array.size()});
  }
  return adds;
}

std::vector<Var> gradient_writes(std::initializer_list<const GradientOutput*> outputs) {
  std::vector<Var> writes;
  for (const GradientOutput* output : outputs) {
    if (output == nullptr || !output->array.defined()) continue;
    writes.push_back(output->array.var());
    if (output->add_into.defined()) writes.push_back(output->add_into.var());
  }
  return writes;
}

void add_formed_gradients(const ops::Kernels& kernels, Stream* stream,
                          const std::vector<GradientAdd>& adds) {
  for (const GradientAdd& add : adds) {
    void* buffer = add.buffer.resolve();
    kernels.binary_dense(stream, ops::BinaryOp::add, add.dtype, buffer, add.formed.resolve(),
                         buffer, add.size);
  }
}

void push_reduce_axis_into(ops::ReduceOp op, const NDArray& x, int axis,
                           const GradientOutput& out) {
  const LazyView in = lazy_view(x);
  // The kernel writes the dense result as the reduced shape (as push_reduce_axis does).
  LazyView result = lazy_view(out.array);
  result.layout = ops::contiguous_view(nullptr, out.array.dtype(), x.shape().without_axis(axis));
  const std::vector<GradientAdd> adds = gradient_adds({&out});
  const std::vector<Var> writes = gradient_writes({&out});
  out.array.engine().push(
      [op, in, axis, result, adds](RunContext& ctx) {
        const ops::Kernels& table = kernels(ctx);
        table.reduce_axis(ctx.stream(), op, in.resolve(), axis, result.resolve());
        add_formed_gradients(table, ctx.stream(), adds);
      },
      out.array.device(), {x.var()}, writes, {.name = ops::op_name(op)});
  out.queued();
}

}  // namespace tandem::nd::detail
