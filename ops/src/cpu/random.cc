#include "tandem/ops/cpu/random.h"

#include <string>

#include "common/strided_loop.h"
#include "parallel.h"
#include "tandem/errors.h"
#include "tandem/ops/philox.h"

namespace tandem::ops::cpu {

namespace {

template <class T, class Dist>
std::uint64_t fill_random(const ArrayView& out, const Dist& dist, std::uint64_t seed,
                          std::uint64_t counter) {
  constexpr std::int64_t per_block = Dist::template values_per_block<T>;
  const auto layout = make_layout<1>(out.shape, {&out.strides});
  const std::int64_t n = layout.num_elements();
  const std::int64_t blocks = (n + per_block - 1) / per_block;
  T* dst = out.typed<T>();
  const std::int64_t so = layout.inner_stride(0);
  // Work is split on block boundaries so every element sees the bits of its own block.
  parallel_blocks(blocks, kElementwiseBlock / per_block,
                  [&](std::int64_t, std::int64_t first, std::int64_t last) {
                    T values[per_block];
                    std::int64_t index = first * per_block;
                    const std::int64_t end = std::min(n, last * per_block);
                    for_each_run(layout, index, end, [&](const auto& off, std::int64_t count) {
                      for (std::int64_t i = 0; i < count; ++i, ++index) {
                        const std::int64_t lane = index % per_block;
                        if (lane == 0 || i == 0) {
                          dist(random::philox_block(
                                   seed, counter + static_cast<std::uint64_t>(index / per_block)),
                               values);
                        }
                        dst[off[0] + i * so] = values[lane];
                      }
                    });
                  });
  return static_cast<std::uint64_t>(blocks);
}

template <class Dist>
std::uint64_t dispatch_floating(const char* name, const ArrayView& out, const Dist& dist,
                                std::uint64_t seed, std::uint64_t counter) {
  switch (out.dtype) {
    case DType::float32:
      return fill_random<float>(out, dist, seed, counter);
    case DType::float64:
      return fill_random<double>(out, dist, seed, counter);
    default:
      throw Error(std::string("tandem: random.") + name + " draws floating-point values; " +
                  dtype_name(out.dtype) + " was asked for");
  }
}

}  // namespace

std::uint64_t random_uniform(const ArrayView& out, double low, double high, std::uint64_t seed,
                             std::uint64_t counter) {
  return dispatch_floating("uniform", out, random::UniformDistribution{low, high}, seed, counter);
}

std::uint64_t random_normal(const ArrayView& out, double mean, double stddev, std::uint64_t seed,
                            std::uint64_t counter) {
  return dispatch_floating("normal", out, random::NormalDistribution{mean, stddev}, seed, counter);
}

}  // namespace tandem::ops::cpu
