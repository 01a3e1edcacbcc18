// Failure paths of the gpu(i) backend (skipped, visibly, without a device): a skipped host item
// still releases what it holds, pinned memory freed inside a host callback is freed later
// outside it (CUDA calls are forbidden there), and a copy between two gpus works whether or not
// peer access can be enabled.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cuda_memory.h"
#include "cuda_test_util.h"
#include "tandem/accel/accelerator.h"

using tandem::Queue;
using tandem::test::cuda_ok;
using tandem::test::have_cuda;

TEST_SUITE("cuda.failure_paths") {
  TEST_CASE("a host item skipped after an upstream failure is destroyed, releasing its captures") {
    if (!have_cuda("skipped item releases")) return;
    tandem::Accelerator& gpu = tandem::accelerator(tandem::cuda(0));
    tandem::Stream& first = gpu.stream(Queue::compute, 0);
    tandem::Stream& second = gpu.stream(Queue::copy_d2h);
    first.enqueue_host([] { throw std::runtime_error("upstream failure"); }, {});
    second.wait(first.record());
    // `held` stands for a pinned stage (frontend/src/core/transfer.cc).
    auto held = std::make_shared<int>(0);
    std::atomic<bool> ran{false};
    second.enqueue_host([held, &ran] { ran = true; }, {});
    tandem::EventRef done = second.record();
    CHECK_THROWS_WITH(done->synchronize(), doctest::Contains("upstream failure"));
    CHECK_FALSE(ran);
    CHECK(held.use_count() == 1);  // the skipped item's capture is gone
    // The failure is reported once per stream that saw it; leave both streams clean.
    CHECK_THROWS(first.synchronize());
    try {
      second.synchronize();
    } catch (const std::exception&) {
    }
    CHECK_NOTHROW(second.synchronize());
  }

  TEST_CASE("pinned memory freed inside a host callback is freed later, outside it") {
    if (!have_cuda("deferred pinned free")) return;
    tandem::Stream& stream = tandem::accelerator(tandem::cuda(0)).stream(Queue::compute, 0);
    tandem::detail::CudaPinnedAllocator pinned(0);
    void* block = pinned.allocate(4096);
    REQUIRE(block != nullptr);
    // The out-of-memory fallback of MemoryPool::free: the raw free, in a callback.
    stream.enqueue_host([&pinned, block] { pinned.deallocate(block, 4096); }, {});
    CHECK_NOTHROW(stream.synchronize());  // cudaFreeHost there would answer an error or hang
    CHECK(pinned.deferred_frees() == 1);
    void* next = pinned.allocate(4096);  // frees the deferred block first
    CHECK(pinned.deferred_frees() == 0);
    pinned.deallocate(next, 4096);
    CHECK(cudaGetLastError() == cudaSuccess);
  }

  TEST_CASE("a copy between two gpus arrives, with or without peer access") {
    if (!have_cuda("peer copy")) return;
    if (tandem::accelerator_count(tandem::DeviceKind::cuda) < 2) {
      MESSAGE("SKIPPED: one CUDA device, no peer copy to try");
      return;
    }
    int possible = 0;
    cuda_ok(cudaDeviceCanAccessPeer(&possible, 0, 1), "cudaDeviceCanAccessPeer");
    MESSAGE("peer access between gpu(0) and gpu(1) is " << (possible ? "possible" : "impossible"));
    tandem::Accelerator& gpu0 = tandem::accelerator(tandem::cuda(0));
    tandem::Accelerator& gpu1 = tandem::accelerator(tandem::cuda(1));
    const std::size_t bytes = 1 << 20;
    tandem::MemoryBlock host = gpu0.pinned_pool().allocate(bytes);
    tandem::MemoryBlock back = gpu0.pinned_pool().allocate(bytes);
    tandem::MemoryBlock on0 = gpu0.device_pool().allocate(bytes);
    tandem::MemoryBlock on1 = gpu1.device_pool().allocate(bytes);
    std::memset(host.data, 0x5a, bytes);
    std::memset(back.data, 0, bytes);
    tandem::Stream& peer = gpu0.stream(Queue::copy_d2d);
    peer.copy(on0.data, host.data, bytes);
    CHECK_NOTHROW(peer.copy(on1.data, on0.data, bytes));  // never throws for lack of access
    CHECK_NOTHROW(peer.copy(on0.data, on1.data, bytes));  // the other direction, tried again
    peer.copy(back.data, on1.data, bytes);
    CHECK_NOTHROW(peer.synchronize());
    CHECK(std::memcmp(host.data, back.data, bytes) == 0);
    gpu1.device_pool().free(on1);
    gpu0.device_pool().free(on0);
    gpu0.pinned_pool().free(back);
    gpu0.pinned_pool().free(host);
  }
}
