// Running a kernel from inside an engine op: one lambda per front-end op, whatever the device.
// The op reads its backend's kernel table (tandem/ops/kernels.h) from the device it runs on and
// hands the kernel its stream (nullptr for a CPU op):
//
//   engine.push([=](tandem::RunContext& ctx) {
//     detail::kernels(ctx).unary_dense(ctx.stream(), op, dtype, ri.resolve(), ro.resolve(), n);
//   }, device, {in}, {out}, {.name = name});
//
// On a CPU device the kernel runs inline. On an accelerator the op completes at launch: the
// kernel only *enqueues* work on ctx.stream(), and the engine fences the op's vars with the
// stream's event. So everything the work needs is resolved in the body (memory is allocated
// there, and an allocation failure fails the op like any other error) and passed by value.
//
// The rule for accelerator ops (docs/design.md): the body runs on the device's launcher thread,
// possibly before earlier device work on its vars has run (a D2H copy writes its host array in
// a stream host item). It may compute pointers, allocate and enqueue, but never reads or writes
// the bytes behind its vars: every access to them is stream work (kernels, Stream::copy,
// Stream::enqueue_host), which runs after the waits the engine enqueued for the op.
#pragma once

#include "tandem/ops/kernels.h"
#include "tandem/run_context.h"

namespace tandem::nd::detail {

inline const ops::Kernels& kernels(const RunContext& ctx) {
  return ops::kernels_for(ctx.device().kind);
}

}  // namespace tandem::nd::detail
