// Pinned host arrays and staged copies (issue 22, item 5), on the cpu and sim(0): the pinned flag
// through creation, handles, views, pin_memory() and copies back from an accelerator; copies
// from and into pinned arrays go straight over the bus (no staging block); pageable arrays
// bigger than a staging chunk cross in chunks and arrive byte for byte, at odd sizes and
// offsets, both ways; misuse is a clear tandem::Error.
#include <cstdint>
#include <string>
#include <vector>

#include "frontend_test_util.h"
#include "tandem/accel/accelerator.h"

namespace tandem::testing {
namespace {

// The staging chunk of frontend/src/transfer.h (4 MiB), in int32 elements.
constexpr std::int64_t kChunkElements = (std::int64_t{16} << 20) / 4;  // transfer.h

// Requests the pool served, from its cache or the raw allocator.
std::uint64_t requests(const MemoryPool& pool) {
  const MemoryPoolStats stats = pool.stats();
  return stats.raw_allocations + stats.cache_hits;
}

// 0, 1, 2, ... as int32, made on the host by the caller (no op), so the values are exact.
NDArray counting(std::int64_t n, std::int32_t first = 0) {
  std::vector<std::int32_t> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    values[static_cast<std::size_t>(i)] = first + static_cast<std::int32_t>(i);
  return nd::from_vector(values);
}

std::vector<std::int32_t> counting_values(std::int64_t n, std::int32_t first = 0) {
  return counting(n, first).to_vector<std::int32_t>();
}

}  // namespace

TEST_SUITE("frontend.pinned_memory") {
  TEST_CASE("a pinned array says so through its handles and views, and holds its values") {
    const NDArray a = nd::full({3, 4}, 2.5, nd::float32, cpu(), nd::HostMemory::pinned);
    CHECK(a.is_pinned());
    CHECK(a.to_vector<float>() == std::vector<float>(12, 2.5f));
    const NDArray handle = a;
    CHECK(handle.is_pinned());
    CHECK(a.reshape({12}).is_pinned());
    CHECK(a[1].is_pinned());
    CHECK(a.T().is_pinned());
    CHECK_FALSE(nd::full({3, 4}, 2.5).is_pinned());
    CHECK_FALSE(nd::zeros({3, 4}, nd::float32, cpu(), nd::HostMemory::pageable).is_pinned());
    // A copy on the cpu is a new, pageable array.
    CHECK_FALSE(a.copy().is_pinned());
    for (auto memory : {nd::HostMemory::pinned, nd::HostMemory::pageable}) {
      CHECK(nd::empty({5}, nd::int64, cpu(), memory).to_vector<std::int64_t>() ==
            std::vector<std::int64_t>(5, 0));
      CHECK(nd::zeros({2}, nd::float64, cpu(), memory).to_vector<double>() ==
            std::vector<double>{0, 0});
      CHECK(nd::ones({2}, nd::int32, cpu(), memory).to_vector<std::int32_t>() ==
            std::vector<std::int32_t>{1, 1});
    }
    // Tiny arrays too: a pinned array never keeps its bytes inline in the storage object.
    const NDArray tiny = nd::ones({1}, nd::float32, cpu(), nd::HostMemory::pinned);
    CHECK(tiny.is_pinned());
    CHECK(tiny.scalar<float>() == 1.0f);
  }

  TEST_CASE("pin_memory copies a pageable array once; a pinned one is returned as it is") {
    const NDArray pageable = counting(10);
    const NDArray pinned = pageable.pin_memory();
    CHECK(pinned.is_pinned());
    CHECK_FALSE(pinned.shares_storage_with(pageable));
    CHECK(pinned.to_vector<std::int32_t>() == counting_values(10));
    const NDArray again = pinned.pin_memory();
    CHECK(again.shares_storage_with(pinned));
    // A strided view: the pinned copy is dense, with the view's values.
    const NDArray grid = nd::arange(0, 12).reshape({3, 4});
    CHECK(grid.T().pin_memory().to_vector<float>() == grid.T().copy().to_vector<float>());
  }

  TEST_CASE("copyto(cpu()) and as_in_context(cpu()) from an accelerator return pinned arrays") {
    const NDArray on_sim = counting(100).copyto(sim(0));
    CHECK_FALSE(on_sim.is_pinned());
    const NDArray back = on_sim.copyto(cpu());
    CHECK(back.is_pinned());
    CHECK(back.to_vector<std::int32_t>() == counting_values(100));
    CHECK(on_sim.as_in_context(cpu()).is_pinned());
    // A copy into an existing pageable array leaves it pageable.
    NDArray target = nd::zeros({100}, nd::int32);
    on_sim.copyto(target);
    CHECK_FALSE(target.is_pinned());
    CHECK(target.to_vector<std::int32_t>() == counting_values(100));
  }

  TEST_CASE("copies from and into pinned arrays take no staging block; pageable ones do") {
    MemoryPool& pool = accelerator(sim(0)).pinned_pool();
    // Pinned by sim(1) (pin_memory would take cuda(0)'s pool where a GPU is present, which is
    // no pinned memory for sim): sim's pinned memory is pinned for every sim device.
    const NDArray pinned = counting(1000).copyto(sim(1)).copyto(cpu());
    const NDArray pageable = counting(1000);
    pinned.wait_to_read();
    pageable.wait_to_read();
    REQUIRE(pinned.is_pinned());
    const NDArray on_sim = nd::zeros({1000}, nd::int32, sim(0));
    on_sim.wait_to_read();

    std::uint64_t before = requests(pool);
    pinned.copyto(on_sim);
    on_sim.wait_to_read();
    CHECK(requests(pool) == before);  // H2D straight from the pinned array
    CHECK(on_sim.to_vector<std::int32_t>() == counting_values(1000));

    NDArray pinned_target = nd::zeros({1000}, nd::int32, sim(1)).copyto(cpu());
    pinned_target.wait_to_read();
    before = requests(pool);
    on_sim.copyto(pinned_target);
    pinned_target.wait_to_read();
    CHECK(requests(pool) == before);  // D2H straight into the pinned array
    CHECK(pinned_target.to_vector<std::int32_t>() == counting_values(1000));

    before = requests(pool);
    pageable.copyto(on_sim);
    on_sim.wait_to_read();
    CHECK(requests(pool) == before + 1);  // staged through one pinned block
  }

  TEST_CASE("the chunked copies of pageable arrays give identical bytes at odd sizes and offsets") {
    for (const std::int64_t n :
         {kChunkElements - 1, kChunkElements + 1, 2 * kChunkElements + 3, 3 * kChunkElements - 7}) {
      CAPTURE(n);
      const std::vector<std::int32_t> expected = counting_values(n, 7);
      // H2D from a view that starts 5 elements into its storage, chunked (pageable, > 1 chunk).
      const NDArray source = counting(n + 9, 2).slice(5, 5 + n);
      REQUIRE_FALSE(source.is_pinned());
      const NDArray on_sim = source.copyto(sim(0));
      // D2H into a pageable view that starts 3 elements into its storage, chunked.
      NDArray landing = nd::full({n + 8}, -1, nd::int32);
      on_sim.copyto(landing.slice(3, 3 + n));
      const std::vector<std::int32_t> landed = landing.to_vector<std::int32_t>();
      CHECK(std::vector<std::int32_t>(landed.begin() + 3, landed.begin() + 3 + n) == expected);
      // The bytes around the view are untouched.
      CHECK(landed[2] == -1);
      CHECK(landed[static_cast<std::size_t>(n) + 3] == -1);
      // D2H into a pinned array (straight) and H2D again from it (straight), against a sim to
      // sim round trip.
      CHECK(on_sim.copyto(cpu()).copyto(sim(1)).copyto(cpu()).to_vector<std::int32_t>() ==
            expected);
    }
  }

  TEST_CASE("staged copies keep stream order: a chain of round trips without waits") {
    // Each copy is queued before the one it reads has run: the chunks of one transfer must not
    // overtake the transfer before them on the same arrays.
    const std::int64_t n = 2 * kChunkElements + 1;
    NDArray host = counting(n);
    for (int round = 0; round < 3; ++round) {
      NDArray device = host.copyto(sim(0));
      device += 1;
      NDArray pageable = nd::zeros({n}, nd::int32);
      device.copyto(pageable);  // chunked D2H into a pageable array
      host = pageable;
    }
    CHECK(host.to_vector<std::int32_t>() == counting_values(n, 3));
  }

  TEST_CASE("pinned memory asked for on an accelerator, or pin_memory of a device array, throws") {
    check_error([] { (void)nd::zeros({4}, nd::float32, sim(0), nd::HostMemory::pinned); },
                {"zeros", "pinned", "sim(0)", "only cpu arrays"});
    check_error([] { (void)nd::full({4}, 1.0, nd::float32, sim(1), nd::HostMemory::pinned); },
                {"full", "pinned", "sim(1)"});
    check_error([] { (void)nd::ones({4}, sim(0)).pin_memory(); },
                {"pin_memory", "sim(0)", "only cpu arrays"});
    check_error([] { (void)NDArray().pin_memory(); }, {"pin_memory"});
    CHECK_FALSE(NDArray().is_pinned());
  }
}

}  // namespace tandem::testing
