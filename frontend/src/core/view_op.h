// push_view_op: queues one kernel over a fixed set of array views on any device, for ops whose
// kernels take plain ArrayViews and options (convolution, pooling):
//
//   detail::push_view_op<3>(engine, out.device(), "conv2d_backward_data", {vdy, vw, vdx},
//       {dy.var(), w.var()}, {dx.var()},
//       [g](const ops::Kernels& k, Stream* s, const auto& v) {
//         k.conv2d_backward_data(s, v[0], v[1], v[2], g);
//       });
//
// The op takes the kernel from the table of the device it runs on (kernels.h) and hands it the
// op's stream (nullptr on the cpu), like every other front-end op. A view with no storage (an
// optional operand that is absent) resolves to a view with data == nullptr.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

#include "core/kernels.h"
#include "core/lazy_view.h"
#include "tandem/engine.h"

namespace tandem::nd::detail {

template <std::size_t N>
std::array<ops::ArrayView, N> resolve_all(const std::array<LazyView, N>& views) {
  std::array<ops::ArrayView, N> resolved;
  for (std::size_t i = 0; i < N; ++i) {
    resolved[i] = views[i].storage != nullptr ? views[i].resolve() : views[i].layout;
  }
  return resolved;
}

template <std::size_t N, class Kernel>
void push_view_op(Engine& engine, Device device, const char* name,
                  const std::array<LazyView, N>& views, VarList reads, VarList writes,
                  Kernel kernel) {
  // Heap-held: the views and options are more than the engine's inline op storage holds.
  auto state = std::make_shared<const std::array<LazyView, N>>(views);
  engine.push(
      [state, kernel](RunContext& ctx) { kernel(kernels(ctx), ctx.stream(), resolve_all(*state)); },
      device, reads, writes, {.name = name});
}

}  // namespace tandem::nd::detail
