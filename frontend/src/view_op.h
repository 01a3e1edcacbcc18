// push_view_op: queues one kernel over a fixed set of array views on any device, the way dot
// does it (frontend/src/linalg.cc), for ops whose kernels take plain ArrayViews and options:
//
//   detail::push_view_op<3>(engine, out.device(), "conv2d", {vx, vw, vy}, {x.var(), w.var()},
//       {out.var()}, cost,
//       [g](const auto& v) { ops::cpu::conv2d(v[0], v[1], v[2], g); },             // cpu, sim
//       [g](const auto& v, Stream& s) { ops::cuda::conv2d(v[0], v[1], v[2], g, s); });  // cuda
//
// On the CPU the host kernel runs inside the op; on an accelerator the op resolves the views
// (allocating there) and enqueues the host kernel (sim) or the cuda kernel on the op's stream,
// as detail::enqueue_kernel describes. A view with no storage (an optional operand that is
// absent) resolves to a view with data == nullptr.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

#include "device_kernel.h"
#include "lazy_view.h"

namespace tandem::nd::detail {

template <std::size_t N>
std::array<ops::ArrayView, N> resolve_all(const std::array<LazyView, N>& views) {
  std::array<ops::ArrayView, N> resolved;
  for (std::size_t i = 0; i < N; ++i) {
    resolved[i] = views[i].storage != nullptr ? views[i].resolve() : views[i].layout;
  }
  return resolved;
}

template <std::size_t N, class HostKernel, class CudaKernel>
void push_view_op(Engine& engine, Device device, const char* name,
                  const std::array<LazyView, N>& views, VarList reads, VarList writes,
                  WorkCost cost, HostKernel host, CudaKernel cuda) {
  // Heap-held: the views and options are more than the engine's inline op storage holds.
  auto state = std::make_shared<const std::array<LazyView, N>>(views);
  if (device.is_accelerator()) {
    engine.push(
        [state, cost, host, cuda](RunContext& ctx) {
          const std::array<ops::ArrayView, N> v = resolve_all(*state);
          enqueue_kernel(
              ctx, cost, [host, v] { host(v); }, [&](Stream& stream) { cuda(v, stream); });
        },
        device, reads, writes, {.name = name});
    return;
  }
  engine.push([state, host] { host(resolve_all(*state)); }, device, reads, writes, {.name = name});
}

}  // namespace tandem::nd::detail
