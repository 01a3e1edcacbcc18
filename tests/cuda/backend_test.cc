// The gpu(i) Stream, DeviceEvent and pools, on a real device (skipped, visibly, without one).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cuda_test_util.h"
#include "tandem/accel/accelerator.h"
#include "tandem/accel/cuda.h"
#include "tandem/errors.h"

using tandem::Queue;
using tandem::test::have_cuda;

TEST_SUITE("cuda.backend") {
  TEST_CASE("a host-to-device-to-host round trip through pinned memory comes back intact") {
    if (!have_cuda("round trip")) return;
    tandem::Accelerator& gpu = tandem::accelerator(tandem::cuda(0));
    const std::size_t bytes = 1 << 20;
    tandem::MemoryBlock pinned_in = gpu.pinned_pool().allocate(bytes);
    tandem::MemoryBlock pinned_out = gpu.pinned_pool().allocate(bytes);
    tandem::MemoryBlock device = gpu.device_pool().allocate(bytes);
    auto* in = static_cast<unsigned char*>(pinned_in.data);
    for (std::size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>(i * 7);
    std::memset(pinned_out.data, 0, bytes);

    tandem::Stream& h2d = gpu.stream(Queue::copy_h2d);
    tandem::Stream& d2h = gpu.stream(Queue::copy_d2h);
    h2d.copy(device.data, pinned_in.data, bytes);
    d2h.wait(h2d.record());  // device-side ordering between the two copy engines
    d2h.copy(pinned_out.data, device.data, bytes);
    tandem::EventRef done = d2h.record();
    done->synchronize();
    CHECK(done->query());
    CHECK(done->error() == nullptr);
    CHECK(std::memcmp(pinned_in.data, pinned_out.data, bytes) == 0);
    gpu.device_pool().free(device);
    gpu.pinned_pool().free(pinned_in);
    gpu.pinned_pool().free(pinned_out);
  }

  TEST_CASE("an exception in host work fails the next event only, and synchronize reports it") {
    if (!have_cuda("host work errors")) return;
    tandem::Stream& stream = tandem::accelerator(tandem::cuda(0)).stream(Queue::compute, 0);
    stream.enqueue_host([] { throw std::runtime_error("boom"); }, {});
    tandem::EventRef failed = stream.record();
    CHECK_THROWS_WITH(failed->synchronize(), doctest::Contains("boom"));
    CHECK(failed->error() != nullptr);
    std::atomic<bool> ran{false};
    stream.enqueue_host([&] { ran = true; }, {});
    tandem::EventRef next = stream.record();
    next->synchronize();
    CHECK(ran);
    CHECK(next->error() == nullptr);
    CHECK_THROWS_WITH(stream.synchronize(), doctest::Contains("boom"));  // reported once
    CHECK_NOTHROW(stream.synchronize());
  }

  TEST_CASE("work waiting on a failed event of another stream is skipped and carries the error") {
    if (!have_cuda("error propagation")) return;
    tandem::Accelerator& gpu = tandem::accelerator(tandem::cuda(0));
    tandem::Stream& first = gpu.stream(Queue::compute, 0);
    tandem::Stream& second = gpu.stream(Queue::copy_h2d);
    first.enqueue_host(
        [] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          throw std::runtime_error("upstream failure");
        },
        {});
    tandem::EventRef upstream = first.record();
    second.wait(upstream);
    std::atomic<bool> ran{false};
    second.enqueue_host([&] { ran = true; }, {});
    tandem::EventRef downstream = second.record();
    CHECK_THROWS_WITH(downstream->synchronize(), doctest::Contains("upstream failure"));
    CHECK_FALSE(ran);
    CHECK_THROWS(first.synchronize());
    CHECK_NOTHROW(second.synchronize());
  }

  TEST_CASE("timing events give steady_clock times in stream order") {
    if (!have_cuda("timing events")) return;
    tandem::Stream& stream = tandem::accelerator(tandem::cuda(0)).stream(Queue::compute, 1);
    const auto before = std::chrono::steady_clock::now().time_since_epoch();
    tandem::EventRef start = stream.record(true);
    stream.enqueue_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, {});
    tandem::EventRef end = stream.record(true);
    end->synchronize();
    const auto after = std::chrono::steady_clock::now().time_since_epoch();
    REQUIRE(start->time_ns() > 0);
    CHECK(end->time_ns() - start->time_ns() >= 19'000'000);
    // Within the calibration's error (a few microseconds) of the host's own clock.
    CHECK(start->time_ns() >= std::chrono::nanoseconds(before).count() - 1'000'000);
    CHECK(end->time_ns() <= std::chrono::nanoseconds(after).count() + 1'000'000);
    CHECK(stream.record(false)->time_ns() == -1);
  }

  TEST_CASE("cuBLAS handles belong to compute streams; other streams are refused clearly") {
    if (!have_cuda("cublas handles")) return;
    tandem::Accelerator& gpu = tandem::accelerator(tandem::cuda(0));
    cublasHandle_t a = tandem::detail::cublas_handle(gpu.stream(Queue::compute, 0));
    cublasHandle_t b = tandem::detail::cublas_handle(gpu.stream(Queue::compute, 1));
    CHECK(a != nullptr);
    CHECK(a == tandem::detail::cublas_handle(gpu.stream(Queue::compute, 0)));
    if (gpu.compute_streams() > 1) CHECK(a != b);
    cudaStream_t bound = nullptr;
    CHECK(cublasGetStream(a, &bound) == CUBLAS_STATUS_SUCCESS);
    CHECK(bound == tandem::cuda_stream(gpu.stream(Queue::compute, 0)));
    CHECK_THROWS_WITH_AS(tandem::detail::cublas_handle(gpu.stream(Queue::copy_h2d)),
                         doctest::Contains("only compute streams"), tandem::Error);
  }

  TEST_CASE("the device pool reuses freed blocks and reports out of memory as an error") {
    if (!have_cuda("device pool")) return;
    tandem::MemoryPool& pool = tandem::accelerator(tandem::cuda(0)).device_pool();
    tandem::MemoryBlock block = pool.allocate(3 << 20);
    void* first = block.data;
    pool.free(block);
    const auto before = pool.stats();
    tandem::MemoryBlock again = pool.allocate(3 << 20);
    CHECK(again.data == first);
    CHECK(pool.stats().cache_hits == before.cache_hits + 1);
    pool.free(again);
    // Far more than any GPU has: cudaMalloc fails, the pool empties its cache, retries, throws.
    CHECK_THROWS_WITH_AS(pool.allocate(std::size_t{1} << 50), doctest::Contains("gpu(0)"),
                         tandem::OutOfMemoryError);
    // The failure left no stale CUDA error behind: the next allocation works.
    tandem::MemoryBlock after = pool.allocate(1 << 20);
    CHECK(after.data != nullptr);
    pool.free(after);
  }
}
