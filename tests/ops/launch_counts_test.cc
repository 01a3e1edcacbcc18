// The launch counters (tandem/launch_counters.h) as sim's kernels bump them: the launches the
// CUDA kernels make for the same op, so that CI pins down the GPU's launch structure without a
// GPU. A convolution's launches do not grow with the batch; a reduction along an axis counts the
// CUDA path it would take; the profiler records each op's counts and sums them per op name; an
// op's device allocations are the pool's misses.
#include <doctest/doctest.h>

#include <tandem/accel/accelerator.h>
#include <tandem/engine.h>
#include <tandem/launch_counters.h>
#include <tandem/ops/kernels.h>
#include <tandem/profiler.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/conv_launches.h"  // ops/src: the launch plans the CUDA kernels share
#include "common/reduce_plan.h"

namespace ops = tandem::ops;
using tandem::LaunchCounts;

namespace {

ops::Conv2dGeometry conv_geometry(std::int64_t batch, std::int64_t groups = 1) {
  ops::Conv2dGeometry g;
  g.batch = batch;
  g.in_channels = 4;
  g.in_h = g.in_w = 8;
  g.out_channels = 6;
  g.kernel_h = g.kernel_w = 3;
  g.pad_h = g.pad_w = 1;
  g.out_h = g.out_w = 8;
  g.groups = groups;
  return g;
}

// Buffers of one convolution on the host (sim's kernels run on host memory).
struct ConvBuffers {
  std::vector<float> x, w, bias, y;
  ops::ArrayView xv, wv, bv, yv;
  explicit ConvBuffers(const ops::Conv2dGeometry& g)
      : x(static_cast<std::size_t>(g.batch * g.in_channels * g.in_h * g.in_w), 0.5f),
        w(static_cast<std::size_t>(g.out_channels * g.col_rows()), 0.25f),
        bias(static_cast<std::size_t>(g.out_channels), 1.0f),
        y(static_cast<std::size_t>(g.batch * g.out_channels * g.col_cols())) {
    xv = ops::contiguous_view(x.data(), ops::DType::float32,
                              ops::Shape{g.batch, g.in_channels, g.in_h, g.in_w});
    wv = ops::contiguous_view(
        w.data(), ops::DType::float32,
        ops::Shape{g.out_channels, g.in_channels_per_group(), g.kernel_h, g.kernel_w});
    bv = ops::contiguous_view(bias.data(), ops::DType::float32, ops::Shape{g.out_channels});
    yv = ops::contiguous_view(y.data(), ops::DType::float32,
                              ops::Shape{g.batch, g.out_channels, g.out_h, g.out_w});
  }
};

struct PassCounts {
  LaunchCounts forward, backward_data, backward_weight;
};

// The three passes of one convolution on sim(0)'s first compute stream, counted on this thread.
PassCounts count_conv_passes(const ops::Conv2dGeometry& g) {
  ConvBuffers b(g);
  std::vector<float> dx(b.x.size()), dw(b.w.size());
  const auto dxv = ops::contiguous_view(dx.data(), ops::DType::float32, b.xv.shape);
  const auto dwv = ops::contiguous_view(dw.data(), ops::DType::float32, b.wv.shape);
  tandem::Stream& stream = tandem::accelerator(tandem::sim(0)).stream(tandem::Queue::compute);
  const ops::Kernels& k = ops::host_stream_kernels();
  PassCounts counts;
  LaunchCounts before = tandem::launch_counts();
  k.conv2d(&stream, b.xv, b.wv, b.bv, b.yv, g);
  counts.forward = tandem::launch_counts() - before;
  before = tandem::launch_counts();
  k.conv2d_backward_data(&stream, b.yv, b.wv, dxv, g);
  counts.backward_data = tandem::launch_counts() - before;
  before = tandem::launch_counts();
  k.conv2d_backward_weight(&stream, b.xv, b.yv, dwv, g);
  counts.backward_weight = tandem::launch_counts() - before;
  stream.synchronize();  // the buffers outlive the work
  return counts;
}

const tandem::profiler::OpEvent* find_event(const std::vector<tandem::profiler::OpEvent>& events,
                                            const std::string& name) {
  const auto it =
      std::find_if(events.begin(), events.end(), [&](const auto& e) { return e.name == name; });
  return it == events.end() ? nullptr : &*it;
}

}  // namespace

TEST_SUITE("ops.launch_counts") {
  TEST_CASE("a convolution's launches on sim do not grow with the batch") {
    const PassCounts one = count_conv_passes(conv_geometry(1));
    // forward: im2col + bias kernels and one batched gemm; backward data: one batched gemm and
    // col2im; backward weight: im2col, the regrouping of dy and one gemm over the whole batch.
    CHECK(one.forward == LaunchCounts{2, 1, 0});
    CHECK(one.backward_data == LaunchCounts{1, 1, 0});
    CHECK(one.backward_weight == LaunchCounts{2, 1, 0});
    for (std::int64_t batch : {8, 64}) {
      CAPTURE(batch);
      const PassCounts many = count_conv_passes(conv_geometry(batch));
      CHECK(many.forward == one.forward);
      CHECK(many.backward_data == one.backward_data);
      CHECK(many.backward_weight == one.backward_weight);
    }
  }

  TEST_CASE("a grouped convolution makes one library call per group, whatever the batch") {
    for (std::int64_t batch : {1, 32}) {
      CAPTURE(batch);
      const PassCounts c = count_conv_passes(conv_geometry(batch, 2));
      CHECK(c.forward == LaunchCounts{2, 2, 0});
      CHECK(c.backward_data == LaunchCounts{1, 2, 0});
      CHECK(c.backward_weight == LaunchCounts{2, 2, 0});
    }
  }

  TEST_CASE("the launches grow only when a chunk's scratch passes its bound") {
    // 3x3 over 64 channels of 224x224: one sample's im2col is 64 * 9 * 224 * 224 floats
    // (~116 MiB), so 256 MiB of scratch holds two samples and a batch of 8 takes 4 chunks.
    ops::Conv2dGeometry g;
    g.batch = 8;
    g.in_channels = g.out_channels = 64;
    g.in_h = g.in_w = g.out_h = g.out_w = 224;
    g.kernel_h = g.kernel_w = 3;
    g.pad_h = g.pad_w = 1;
    CHECK(ops::conv_chunk_samples(g, ops::ConvPass::forward, sizeof(float)) == 2);
    CHECK(ops::conv_launches(g, ops::ConvPass::forward, sizeof(float), false, 1) ==
          LaunchCounts{4, 4, 0});
    g.batch = 0;
    CHECK(ops::conv_launches(g, ops::ConvPass::backward_weight, sizeof(float), false, 1) ==
          LaunchCounts{1, 0, 0});  // dW = 0: one memset
    CHECK(ops::conv_launches(g, ops::ConvPass::forward, sizeof(float), true, 0) == LaunchCounts{});
  }

  TEST_CASE("a reduction along an axis counts the launches of the CUDA path it would take") {
    // common/reduce_plan.h: a dense input reduced along an axis with elements after it takes
    // the columns kernel (two kernels); the last axis, and any strided view, a CUB segmented
    // reduce and a finishing kernel.
    std::vector<float> data(4 * 5 * 6, 1.0f), out(5 * 6);  // the largest result: axis 0
    tandem::Stream& stream = tandem::accelerator(tandem::sim(0)).stream(tandem::Queue::compute);
    const ops::Kernels& k = ops::host_stream_kernels();
    const auto counted = [&](const ops::ArrayView& in, int axis) {
      const ops::ArrayView reduced =
          ops::contiguous_view(out.data(), ops::DType::float32, in.shape.without_axis(axis));
      const LaunchCounts before = tandem::launch_counts();
      k.reduce_axis(&stream, ops::ReduceOp::sum, in, axis, reduced);
      const LaunchCounts made = tandem::launch_counts() - before;
      stream.synchronize();
      return made;
    };
    const auto dense = ops::contiguous_view(data.data(), ops::DType::float32, ops::Shape{4, 5, 6});
    CHECK(counted(dense, 0) == LaunchCounts{2, 0, 0});
    CHECK(counted(dense, 1) == LaunchCounts{2, 0, 0});
    CHECK(counted(dense, 2) == LaunchCounts{1, 1, 0});
    // The 4 x 6 view of every fifth row: not one gap-free run.
    const ops::ArrayView rows{data.data(), ops::DType::float32, ops::Shape{4, 6}, {30, 1}};
    CHECK(counted(rows, 0) == LaunchCounts{1, 1, 0});
    CHECK(counted(dense, 0) == ops::reduce_axis_launches(dense, 0, dense));
  }

  TEST_CASE("the profiler records each op's launches and sums them per op name") {
    auto& engine = tandem::Engine::get();
    const ops::Conv2dGeometry g = conv_geometry(4);
    ConvBuffers b(g);
    std::vector<float> sum(1);
    const auto sum_view = ops::contiguous_view(sum.data(), ops::DType::float32, ops::Shape{1});
    tandem::Var var = engine.new_var();
    tandem::profiler::start();
    for (int i = 0; i < 3; ++i) {
      engine.push(
          [&](tandem::RunContext& ctx) {
            ops::host_stream_kernels().conv2d(ctx.stream(), b.xv, b.wv, b.bv, b.yv, g);
          },
          tandem::sim(0), {}, {var}, {.name = "conv"});
    }
    engine.push(
        [&](tandem::RunContext& ctx) {
          ops::host_stream_kernels().reduce_all(ctx.stream(), ops::ReduceOp::sum, b.yv, sum_view);
        },
        tandem::sim(0), {}, {var}, {.name = "total"});
    engine.push([] {}, tandem::cpu(), {}, {var}, {.name = "host"});
    engine.wait_all();
    tandem::accelerator(tandem::sim(0)).synchronize();  // the buffers outlive the work
    tandem::profiler::stop();
    const auto events = tandem::profiler::events();
    const auto* conv = find_event(events, "conv");
    const auto* total = find_event(events, "total");
    const auto* host = find_event(events, "host");
    REQUIRE(conv != nullptr);
    REQUIRE(total != nullptr);
    REQUIRE(host != nullptr);
    CHECK(conv->counts == LaunchCounts{2, 1, 0});
    CHECK(total->counts == LaunchCounts{1, 1, 0});  // a CUB reduction and its finishing kernel
    CHECK(host->counts == LaunchCounts{});
    const auto stats = tandem::profiler::op_stats(events);
    const auto it =
        std::find_if(stats.begin(), stats.end(), [](const auto& s) { return s.name == "conv"; });
    REQUIRE(it != stats.end());
    CHECK(it->kernels == 6);
    CHECK(it->library_calls == 3);
    CHECK(it->allocations == 0);
    CHECK(tandem::profiler::summary(events).find("kern/op") != std::string::npos);
    engine.delete_var(var);
  }

  TEST_CASE("an op's device allocations are its pool's misses, not its cache hits") {
    auto& engine = tandem::Engine::get();
    tandem::MemoryPool& pool = tandem::accelerator(tandem::sim(1)).device_pool();
    // A size class no other test uses: the first allocation misses the cache.
    const std::size_t bytes = 3 * 1024 * 1024 + 4096;
    tandem::Var var = engine.new_var();
    tandem::profiler::start();
    for (int i = 0; i < 2; ++i) {
      engine.push(
          [&pool, bytes] {
            const tandem::MemoryBlock block = pool.allocate(bytes);
            pool.free(block);
          },
          tandem::sim(1), {}, {var}, {.name = i == 0 ? "first" : "again"});
    }
    engine.wait_all();
    tandem::profiler::stop();
    const auto events = tandem::profiler::events();
    const auto* first = find_event(events, "first");
    const auto* again = find_event(events, "again");
    REQUIRE(first != nullptr);
    REQUIRE(again != nullptr);
    CHECK(first->counts.allocations == 1);
    CHECK(again->counts.allocations == 0);
    engine.delete_var(var);
  }
}
