// Random fills on a gpu(i): one thread per Philox block, writing that block's values to their
// row-major positions, so every element gets exactly the bits the CPU gives it
// (ops/src/cpu/random.cc: element i takes value i % per_block of block counter + i / per_block).
#include "launch.cuh"
#include "tandem/ops/cuda/random.h"
#include "tandem/ops/philox.h"

namespace tandem::ops::cuda {

namespace {

template <class T, class Dist>
__global__ void random_kernel(Dist dist, std::uint64_t seed, std::uint64_t counter, T* out,
                              StridedIndexer<1> indexer, std::int64_t n, std::int64_t blocks) {
  constexpr int per_block = Dist::template values_per_block<T>;
  for (std::int64_t b = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; b < blocks;
       b += std::int64_t{blockDim.x} * gridDim.x) {
    T values[per_block];
    dist(random::philox_block(seed, counter + static_cast<std::uint64_t>(b)), values);
    for (int lane = 0; lane < per_block; ++lane) {
      const std::int64_t i = b * per_block + lane;
      if (i >= n) break;
      std::int64_t off[1];
      indexer.offsets(i, off);
      out[off[0]] = values[lane];
    }
  }
}

template <class T, class Dist>
std::uint64_t fill_random(const char* name, const ArrayView& out, const Dist& dist,
                          std::uint64_t seed, std::uint64_t counter, tandem::Stream& stream) {
  constexpr std::int64_t per_block = Dist::template values_per_block<T>;
  const std::int64_t n = out.num_elements();
  const std::int64_t blocks = (n + per_block - 1) / per_block;
  if (n == 0) return 0;
  Launch launch(stream, name);
  const auto indexer = make_indexer<1>(out.shape, {&out.strides});
  random_kernel<T><<<grid_for(blocks), kThreads, 0, launch.stream()>>>(
      dist, seed, counter, out.typed<T>(), indexer, n, blocks);
  launch.launched();
  return static_cast<std::uint64_t>(blocks);
}

template <class Dist>
std::uint64_t dispatch_floating(const char* name, const ArrayView& out, const Dist& dist,
                                std::uint64_t seed, std::uint64_t counter, tandem::Stream& stream) {
  switch (out.dtype) {
    case DType::float32:
      return fill_random<float>(name, out, dist, seed, counter, stream);
    case DType::float64:
      return fill_random<double>(name, out, dist, seed, counter, stream);
    default:
      throw Error(std::string("tandem: random.") + name + " draws floating-point values; " +
                  dtype_name(out.dtype) + " was asked for");
  }
}

}  // namespace

std::uint64_t random_uniform(const ArrayView& out, double low, double high, std::uint64_t seed,
                             std::uint64_t counter, tandem::Stream& stream) {
  return dispatch_floating("uniform", out, random::UniformDistribution{low, high}, seed, counter,
                           stream);
}

std::uint64_t random_normal(const ArrayView& out, double mean, double stddev, std::uint64_t seed,
                            std::uint64_t counter, tandem::Stream& stream) {
  return dispatch_floating("normal", out, random::NormalDistribution{mean, stddev}, seed, counter,
                           stream);
}

}  // namespace tandem::ops::cuda
