// Running a kernel on an accelerator from inside an engine op: one call site per front-end op,
// whatever the device.
//
//   engine.push([=](tandem::RunContext& ctx) {
//     const void* a = ra.resolve();  void* o = ro.resolve();     // allocate here, at launch
//     detail::enqueue_kernel(ctx, detail::elementwise_cost(n, dtype, 2),
//         [=] { ops::cpu::unary_dense(op, dtype, a, o, n); },      // sim: on the stream thread
//         [=](Stream& s) { ops::cuda::unary_dense(op, dtype, a, o, n, s); });   // cuda
//   }, device, {in}, {out}, {.name = name});
//
// An accelerator op completes at launch: its body only *enqueues* work on ctx.stream(), and the
// engine fences the op's vars with the stream's event. So everything the work needs is resolved
// in the body (memory is allocated there, and an allocation failure fails the op like any other
// error) and captured by value; the work itself runs later, in stream order.
//
// The rule for accelerator ops (docs/design.md): the body runs on the device's launcher thread,
// possibly before earlier device work on its vars has run (a D2H copy writes its host array in
// a stream host item). It may compute pointers, allocate and enqueue, but never reads or writes
// the bytes behind its vars: every access to them is stream work (kernels, Stream::copy,
// Stream::enqueue_host), which runs after the waits the engine enqueued for the op.
//
// CPU ops do not come here: they keep their compact closures and run their kernel inline.
//
// The cuda lambda is type-checked in every build (the ops::cuda declarations are plain C++), but
// called, and so referenced at link time, only in builds with CUDA.
#pragma once

#include <utility>

#include "tandem/accel/stream.h"
#include "tandem/ops/dtype.h"
#include "tandem/run_context.h"

namespace tandem::nd::detail {

template <class HostKernel, class CudaKernel>
void enqueue_kernel(RunContext& ctx, WorkCost cost, HostKernel&& host, CudaKernel&& cuda) {
  Stream& stream = *ctx.stream();
#ifdef TANDEM_HAVE_CUDA
  if (stream.device().kind == DeviceKind::cuda) {
    std::forward<CudaKernel>(cuda)(stream);
    return;
  }
#else
  (void)cuda;
#endif
  stream.enqueue_host(std::forward<HostKernel>(host), cost);
}

// The sim model's view of the front end's kernels (cuda ignores costs). Element-wise kernels
// move every operand once and do a few operations per element; reductions read their input
// once; gemm does 2mnk operations over three matrices.
inline WorkCost elementwise_cost(std::int64_t elements, ops::DType dtype, int operands,
                                 double flops_per_element = 1.0) {
  const double n = static_cast<double>(elements);
  return {.flops = n * flops_per_element,
          .bytes = n * static_cast<double>(ops::dtype_size(dtype)) * operands};
}

inline WorkCost gemm_cost(std::int64_t m, std::int64_t n, std::int64_t k, ops::DType dtype) {
  const double size = static_cast<double>(ops::dtype_size(dtype));
  return {.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
          .bytes = size * static_cast<double>(m * k + k * n + m * n)};
}

}  // namespace tandem::nd::detail
