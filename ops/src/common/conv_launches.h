// How a convolution is cut into launches on a GPU, shared by the CUDA kernels (which launch it)
// and sim's adapters (which count the same launches, so the profiler's counters agree).
//
// The samples go in chunks whose scratch (im2col matrices, and for the weight gradient the
// output gradient regrouped channel-major) fits kScratchBytes; per chunk:
//   forward          1 im2col kernel + one strided-batched gemm per group   (+ 1 bias kernel)
//   backward data    one strided-batched gemm per group + 1 col2im kernel
//   backward weight  1 im2col kernel + 1 regrouping kernel + one gemm per group over all the
//                    chunk's samples at once (beta = 1 after the first chunk)
// So the launches depend on the batch only through the chunk count, which is 1 until a chunk's
// scratch passes kScratchBytes (256 MiB).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tandem/launch_counters.h"
#include "tandem/ops/conv_geometry.h"

namespace tandem::ops {

inline constexpr std::int64_t kConvScratchBytes = std::int64_t{256} << 20;

enum class ConvPass { forward, backward_data, backward_weight };

// Scratch elements per sample of `pass`.
inline std::int64_t conv_scratch_per_sample(const Conv2dGeometry& g, ConvPass pass) {
  const std::int64_t col = g.in_channels * g.kernel_h * g.kernel_w * g.out_h * g.out_w;
  return pass == ConvPass::backward_weight ? col + g.out_channels * g.out_h * g.out_w : col;
}

// Samples per chunk: as many as fit kConvScratchBytes, at least one.
inline std::int64_t conv_chunk_samples(const Conv2dGeometry& g, ConvPass pass,
                                       std::size_t element) {
  const std::int64_t per_sample =
      conv_scratch_per_sample(g, pass) * static_cast<std::int64_t>(element);
  return std::clamp<std::int64_t>(kConvScratchBytes / std::max<std::int64_t>(per_sample, 1), 1,
                                  std::max<std::int64_t>(g.batch, 1));
}

// The kernels and library calls of one pass; nothing when its output is empty.
inline LaunchCounts conv_launches(const Conv2dGeometry& g, ConvPass pass, std::size_t element,
                                  bool has_bias, std::int64_t output_elements) {
  if (output_elements == 0) return {};
  if (pass == ConvPass::backward_weight && g.batch == 0) return {1, 0, 0};  // a memset of dW
  const std::int64_t chunk = conv_chunk_samples(g, pass, element);
  const auto chunks = static_cast<std::uint32_t>((g.batch + chunk - 1) / chunk);
  const auto groups = static_cast<std::uint32_t>(g.groups);
  switch (pass) {
    case ConvPass::forward:
      return {chunks + (has_bias ? 1u : 0u), chunks * groups, 0};
    case ConvPass::backward_data:
      return {chunks, chunks * groups, 0};
    case ConvPass::backward_weight:
      return {2 * chunks, chunks * groups, 0};
  }
  return {};
}

}  // namespace tandem::ops
