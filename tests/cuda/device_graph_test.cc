// Device graphs on gpu(i) (skipped, visibly, without a device): a stream capture becomes a CUDA
// Graph launched many times, a captured window's chain of gpu ops, cuBLAS call included,
// replays as one graph with the results of eager pushes, and independent gpu ops join one graph
// in a window that fails as one unit (tandem::CaptureOptions).
#include <cublas_v2.h>
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "cuda_test_util.h"
#include "tandem/accel/accelerator.h"
#include "tandem/accel/cuda.h"
#include "tandem/accel/device_graph.h"
#include "tandem/engine.h"
#include "tandem/errors.h"
#include "tandem/graph.h"

using tandem::Queue;
using tandem::test::DeviceBuffer;
using tandem::test::have_cuda;

namespace {

constexpr std::size_t kCount = 1024;

// Runs, three times, `fill` (memset to `byte`), `copy` (a -> b) and `scale` (b *= 2, cuBLAS) on
// gpu(0): pushed one by one, or replayed from a capture; returns b.
std::vector<float> run_chain(bool replay, bool device_graphs, std::size_t* graphs) {
  tandem::EngineConfig config;
  config.device_graphs = device_graphs;
  auto engine = tandem::Engine::create(config);
  DeviceBuffer<float> a(kCount), b(kCount);
  tandem::Var va = engine->new_var(), vb = engine->new_var();
  float* pa = a.data();
  float* pb = b.data();
  auto push_chain = [&] {
    engine->push(
        [pa](tandem::RunContext& ctx) {
          tandem::test::cuda_ok(
              cudaMemsetAsync(pa, 0x3f, kCount * sizeof(float), tandem::cuda_stream(*ctx.stream())),
              "cudaMemsetAsync");
        },
        tandem::cuda(0), {}, {va}, {.name = "fill"});
    engine->push([pa, pb](tandem::RunContext& ctx) { ctx.stream()->copy(pb, pa, kCount * 4); },
                 tandem::cuda(0), {va}, {vb}, {.name = "copy"});
    engine->push(
        [pb](tandem::RunContext& ctx) {
          const float two = 2.0f;
          cublasHandle_t handle = tandem::detail::cublas_handle(*ctx.stream());
          REQUIRE(cublasSscal(handle, static_cast<int>(kCount), &two, pb, 1) ==
                  CUBLAS_STATUS_SUCCESS);
        },
        tandem::cuda(0), {vb}, {vb}, {.name = "scale"});
  };
  std::vector<float> result;
  {
    tandem::CapturedGraph graph;
    if (replay) graph = tandem::capture(*engine, push_chain);
    if (graphs != nullptr) *graphs = graph.num_device_graphs();
    for (int i = 0; i < 3; ++i) {
      if (replay) {
        graph.replay();
      } else {
        push_chain();
      }
    }
    engine->wait_all();
    result = b.read();
  }
  engine->delete_var(va);
  engine->delete_var(vb);
  engine->wait_all();
  return result;
}

}  // namespace

TEST_SUITE("cuda.device_graph") {
  TEST_CASE("a gpu stream capture becomes a CUDA graph that each launch runs again") {
    if (!have_cuda("CUDA graph capture")) return;
    tandem::Stream& stream = tandem::accelerator(tandem::cuda(0)).stream(Queue::compute, 0);
    REQUIRE(stream.supports_graph_capture());
    // `target` starts zeroed (DeviceBuffer clears it): the check after end_graph_capture then
    // tells a copy that ran from one that was only captured.
    DeviceBuffer<int> source(std::vector<int>(kCount, 7)), target(kCount);
    REQUIRE(target.read() == std::vector<int>(kCount, 0));
    stream.begin_graph_capture();
    CHECK_THROWS_AS(stream.enqueue_host([] {}, {}), tandem::Error);
    CHECK_THROWS_AS((void)stream.record(), tandem::Error);
    stream.copy(target.data(), source.data(), kCount * sizeof(int));
    std::unique_ptr<tandem::DeviceGraph> graph = stream.end_graph_capture();
    CHECK(graph->num_items() >= 1);
    CHECK(target.read() == std::vector<int>(kCount, 0));  // captured, not run
    graph->launch(stream);
    stream.synchronize();
    CHECK(target.read() == std::vector<int>(kCount, 7));
    tandem::test::cuda_ok(cudaMemset(target.data(), 0, kCount * sizeof(int)), "cudaMemset");
    graph->launch(tandem::accelerator(tandem::cuda(0)).stream(Queue::compute, 1));
    tandem::accelerator(tandem::cuda(0)).synchronize();
    CHECK(target.read() == std::vector<int>(kCount, 7));
  }

  TEST_CASE("a captured chain of gpu ops with a cuBLAS call replays as one CUDA graph") {
    if (!have_cuda("device graphs of captured windows")) return;
    std::size_t graphs = 0;
    const std::vector<float> eager = run_chain(false, true, nullptr);
    float expected = 0;
    const unsigned pattern = 0x3f3f3f3fu;
    std::memcpy(&expected, &pattern, sizeof(float));
    CHECK(eager == std::vector<float>(kCount, 2 * expected));
    CHECK(run_chain(true, true, &graphs) == eager);
    CHECK(graphs == 1);
    CHECK(run_chain(true, false, &graphs) == eager);
    CHECK(graphs == 0);
  }

  TEST_CASE("independent gpu ops replay as one CUDA graph in a window that fails as one unit") {
    if (!have_cuda("device graphs of windows that fail as one unit")) return;
    auto engine = tandem::Engine::create(tandem::EngineConfig{});
    DeviceBuffer<int> a(kCount), b(kCount), c(kCount);
    tandem::Var va = engine->new_var(), vb = engine->new_var(), vc = engine->new_var();
    int* pa = a.data();
    int* pb = b.data();
    int* pc = c.data();
    auto fill = [&](int* data, int byte, tandem::Var var, const char* name) {
      engine->push(
          [data, byte](tandem::RunContext& ctx) {
            tandem::test::cuda_ok(cudaMemsetAsync(data, byte, kCount * sizeof(int),
                                                  tandem::cuda_stream(*ctx.stream())),
                                  "cudaMemsetAsync");
          },
          tandem::cuda(0), {}, {var}, {.name = name});
    };
    // fill a, fill c, copy a -> b: no chain (c's fill reads nothing a's fill wrote).
    auto push_window = [&] {
      fill(pa, 1, va, "fill a");
      fill(pc, 2, vc, "fill c");
      engine->push([pa, pb](tandem::RunContext& ctx) { ctx.stream()->copy(pb, pa, kCount * 4); },
                   tandem::cuda(0), {va}, {vb}, {.name = "copy"});
    };
    {
      tandem::CapturedGraph chains = tandem::capture(*engine, push_window);
      tandem::CapturedGraph one_unit =
          tandem::capture(*engine, {.fail_as_one_unit = true}, push_window);
      CHECK(chains.num_device_graphs() == 0);
      CHECK(one_unit.num_device_graphs() == 1);
      CHECK(one_unit.num_device_graph_ops() == 3);
      for (int i = 0; i < 3; ++i) one_unit.replay();
      engine->wait_all();
      CHECK(b.read() == std::vector<int>(kCount, 0x01010101));
      CHECK(c.read() == std::vector<int>(kCount, 0x02020202));
    }
    for (tandem::Var var : {va, vb, vc}) engine->delete_var(var);
    engine->wait_all();
  }
}
