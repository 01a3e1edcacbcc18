// The launcher thread of gpu(i) makes gpu(i) current before it runs launch functions: a user
// kernel on cuda_stream(stream) and a cuBLAS call on cublas_handle(stream) go to the thread's
// current device, and fail on a stream of another device. Only a machine with two or more GPUs
// can catch a launcher left on device 0; with one GPU the test still checks gpu(0).
#include <cublas_v2.h>
#include <doctest/doctest.h>

#include <vector>

#include "cuda_test_util.h"
#include "tandem/accel/accelerator.h"
#include "tandem/accel/cuda.h"
#include "tandem/engine.h"

using tandem::test::have_cuda;

TEST_SUITE("cuda.launcher") {
  TEST_CASE("launch functions of gpu(i) run with gpu(i) current and cuBLAS works on every gpu") {
    if (!have_cuda("launcher binding")) return;
    const int count = tandem::accelerator_count(tandem::DeviceKind::cuda);
    if (count < 2) MESSAGE("one CUDA device: a launcher left on device 0 cannot show here");
    for (tandem::EngineKind kind : {tandem::EngineKind::threaded, tandem::EngineKind::naive}) {
      CAPTURE(tandem::engine_kind_name(kind));
      tandem::EngineConfig config;
      config.kind = kind;
      auto engine = tandem::Engine::create(config);
      tandem::Var var = engine->new_var();
      // Last device first: a launcher left on the default device 0 shows at once.
      for (int i = count - 1; i >= 0; --i) {
        CAPTURE(i);
        tandem::Accelerator& gpu = tandem::accelerator(tandem::cuda(i));
        tandem::MemoryBlock block = gpu.device_pool().allocate(4 * sizeof(float));
        int current = -1;
        cublasStatus_t scaled = CUBLAS_STATUS_NOT_INITIALIZED;
        float* data = static_cast<float*>(block.data);
        engine->push(
            [&current, &scaled, data](tandem::RunContext& ctx) {
              (void)cudaGetDevice(&current);
              tandem::Stream& stream = *ctx.stream();
              (void)cudaMemsetAsync(data, 0, 4 * sizeof(float), tandem::cuda_stream(stream));
              const float two = 2.0f;
              scaled = cublasSscal(tandem::detail::cublas_handle(stream), 4, &two, data, 1);
            },
            tandem::cuda(i), {}, {var}, {.name = "bound launcher"});
        engine->wait_for_var(var);
        CHECK(current == i);
        CHECK(scaled == CUBLAS_STATUS_SUCCESS);
        gpu.device_pool().free(block);
      }
      engine->delete_var(var);
      engine->wait_all();
    }
  }
}
