// The CPU convolution's chunks of samples and gemm tiles (ops/src/cpu/conv_plan.h): all three
// directions against the direct loops of conv_reference.h at batches around a chunk's size (1,
// one less, equal, one more, two chunks and one), at large and small output planes, with
// groups, strides, dilation and the 1x1 path, in float32 and float64; and the same bits on 1
// and 3 cpu workers.
#include <algorithm>

#include "conv_reference.h"
#include "cpu/conv_plan.h"  // ops/src

namespace tandem::testing {

namespace {

struct ChunkCase {
  const char* what;
  Shape x, w;  // x's batch is set per run
  nd::Conv2dOptions options;
};

std::vector<ChunkCase> chunk_cases() {
  return {
      {"large planes (P = 2304)", {1, 8, 48, 48}, {4, 8, 3, 3}, {.padding = 1}},
      {"small planes (P = 4), several tiles", {1, 32, 2, 2}, {256, 32, 3, 3}, {.padding = 1}},
      {"groups, stride, dilation",
       {1, 6, 30, 30},
       {9, 2, 3, 3},
       {.stride = 2, .padding = 2, .dilation = 2, .groups = 3}},
      {"1x1, x its own im2col", {1, 16, 32, 32}, {8, 16, 1, 1}, {}},
  };
}

ops::Conv2dGeometry geometry(const Shape& x, const Shape& w, const nd::Conv2dOptions& o) {
  const Shape out = nd::conv2d_output_shape(x, w, o);
  return {.batch = x[0],
          .in_channels = x[1],
          .in_h = x[2],
          .in_w = x[3],
          .out_channels = w[0],
          .kernel_h = w[2],
          .kernel_w = w[3],
          .out_h = out[2],
          .out_w = out[3],
          .stride_h = o.stride.h,
          .stride_w = o.stride.w,
          .pad_h = o.padding.h,
          .pad_w = o.padding.w,
          .dilation_h = o.dilation.h,
          .dilation_w = o.dilation.w,
          .groups = o.groups};
}

std::size_t element_size(DType dtype) {
  return dtype == nd::float32 ? 4 : 8;
}

using ops::cpu::ConvDirection;
constexpr ConvDirection kDirections[] = {ConvDirection::forward, ConvDirection::backward_data,
                                         ConvDirection::backward_weight};

// Larger batches make the direct loops slow; the cases are sized so that the boundaries that
// matter stay below.
constexpr std::int64_t kMaxBatch = 150;

// The most samples one chunk of `direction` takes, at a batch larger than that.
std::int64_t most_per_chunk(const ChunkCase& c, DType dtype, ConvDirection direction) {
  ops::Conv2dGeometry g = geometry(c.x, c.w, c.options);
  g.batch = std::int64_t{1} << 30;
  return ops::cpu::conv_most_samples(g, element_size(dtype), direction);
}

// 1, and one less, as many, one more, and twice as many and one as a chunk of each direction
// takes, up to kMaxBatch.
std::vector<std::int64_t> batches(const ChunkCase& c, DType dtype) {
  std::vector<std::int64_t> b{1};
  for (const ConvDirection d : kDirections) {
    const std::int64_t most = most_per_chunk(c, dtype, d);
    for (const std::int64_t n : {most - 1, most, most + 1, 2 * most + 1}) {
      if (n >= 1 && n <= kMaxBatch) b.push_back(n);
    }
  }
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

Shape with_batch(Shape s, std::int64_t batch) {
  s[0] = batch;
  return s;
}

Host rounded(Host h, DType dtype) {
  for (double& v : h.values) v = round_to(v, dtype);
  return h;
}

// The three directions' outputs on the current engine, as float32 bits.
std::vector<std::vector<float>> run_directions(const ChunkCase& c, std::int64_t batch,
                                               std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Shape xs = with_batch(c.x, batch);
  const NDArray x = to_array(random_host(xs, rng), nd::float32);
  const NDArray w = to_array(random_host(c.w, rng), nd::float32);
  const NDArray dy =
      to_array(random_host(nd::conv2d_output_shape(xs, c.w, c.options), rng), nd::float32);
  return {nd::conv2d(x, w, c.options).to_vector<float>(),
          nd::conv2d_backward_data(dy, w, xs, c.options).to_vector<float>(),
          nd::conv2d_backward_weight(dy, x, c.w, c.options).to_vector<float>()};
}

}  // namespace

TEST_SUITE("frontend.conv_chunks") {
  TEST_CASE(
      "the test shapes cross chunk boundaries, in both chunk modes, and split gemms in tiles") {
    // Every direction of every case has a batch of several chunks.
    for (const ChunkCase& c : chunk_cases()) {
      INFO(c.what);
      for (DType dtype : {nd::float32, nd::float64}) {
        for (const ConvDirection d : kDirections) {
          const std::int64_t most = most_per_chunk(c, dtype, d);
          const ops::Conv2dGeometry g = geometry(with_batch(c.x, most + 1), c.w, c.options);
          if (most + 1 <= kMaxBatch)
            CHECK(ops::cpu::conv_chunk_samples(g, element_size(dtype), d) < most + 1);
        }
      }
    }
    // Chunks side by side: the large planes' forward at batch 11 (one sample a chunk); in order,
    // each split into tiles: the small planes' forward at batch 129 (3 chunks of 43 x 4 columns).
    const ChunkCase large = chunk_cases()[0], small = chunk_cases()[1];
    const std::size_t f32 = element_size(nd::float32);
    CHECK(ops::cpu::conv_chunks_in_parallel(
        geometry(with_batch(large.x, 11), large.w, large.options), f32, ConvDirection::forward));
    const ops::Conv2dGeometry g = geometry(with_batch(small.x, 129), small.w, small.options);
    CHECK_FALSE(ops::cpu::conv_chunks_in_parallel(g, f32, ConvDirection::forward));
    const std::int64_t columns = ops::cpu::conv_chunk_samples(g, f32, ConvDirection::forward) * 4;
    CHECK(ops::cpu::gemm_tile_grid(256, columns).tiles() > 1);     // forward: Kg x columns
    CHECK(ops::cpu::gemm_tile_grid(32 * 9, columns).tiles() > 1);  // data: R x columns
    CHECK(ops::cpu::gemm_tile_grid(256, 32 * 9).tiles() > 1);      // weight: Kg x R
  }

  TEST_CASE("conv2d and both gradients match the direct loops at batches around a chunk") {
    std::mt19937_64 rng(25);
    for (const ChunkCase& c : chunk_cases()) {
      for (DType dtype : {nd::float32, nd::float64}) {
        for (const std::int64_t batch : batches(c, dtype)) {
          const std::string what =
              std::string(c.what) + " " + dtype_name(dtype) + " batch " + std::to_string(batch);
          const Shape xs = with_batch(c.x, batch);
          const Shape ys = nd::conv2d_output_shape(xs, c.w, c.options);
          const Host x = rounded(random_host(xs, rng), dtype);
          const Host w = rounded(random_host(c.w, rng), dtype);
          const Host dy = rounded(random_host(ys, rng), dtype);
          const NDArray ax = to_array(x, dtype), aw = to_array(w, dtype), ady = to_array(dy, dtype);
          const auto taps = static_cast<double>(c.w[2] * c.w[3]);
          check_reference(nd::conv2d(ax, aw, c.options), reference_conv2d(x, w, nullptr, c.options),
                          static_cast<double>(c.w[1]) * taps, "forward " + what);
          check_reference(nd::conv2d_backward_data(ady, aw, xs, c.options),
                          reference_conv2d_backward_data(dy, w, xs, c.options),
                          static_cast<double>(c.w[0] / c.options.groups) * taps, "data " + what);
          check_reference(nd::conv2d_backward_weight(ady, ax, c.w, c.options),
                          reference_conv2d_backward_weight(dy, x, c.w, c.options),
                          static_cast<double>(batch * ys[2] * ys[3]), "weight " + what);
        }
      }
    }
  }

  TEST_CASE("conv2d and both gradients give the same bits on 1 and 3 cpu workers") {
    auto one = Engine::create(EngineConfig{.kind = EngineKind::threaded, .cpu_workers = 1});
    auto three = Engine::create(EngineConfig{.kind = EngineKind::threaded, .cpu_workers = 3});
    std::uint64_t seed = 250;
    for (const ChunkCase& c : chunk_cases()) {
      const std::int64_t batch = batches(c, nd::float32).back();
      CAPTURE(c.what);
      CAPTURE(batch);
      std::vector<std::vector<float>> on_one, on_three;
      {
        nd::EngineScope scope(*one);
        on_one = run_directions(c, batch, seed);
      }
      {
        nd::EngineScope scope(*three);
        on_three = run_directions(c, batch, seed);
      }
      CHECK(on_one[0] == on_three[0]);
      CHECK(on_one[1] == on_three[1]);
      CHECK(on_one[2] == on_three[2]);
      ++seed;
    }
  }
}

}  // namespace tandem::testing
