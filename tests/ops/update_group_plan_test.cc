// The plan of a grouped optimizer update (ops/src/common/update_group_plan.h), which the CUDA
// kernel launches from and sim counts launches with: every element of every tensor in exactly
// one chunk, chunks in tensor order, and launch tables within the kernel argument's capacity
// (kUpdateTableTensors tensors, kUpdateTableChunks chunks), as few as the capacity allows.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "common/update_group_plan.h"

namespace ops = tandem::ops;

namespace {

ops::UpdateGroup group_of(const std::vector<std::int64_t>& sizes) {
  ops::UpdateGroup group;
  for (std::int64_t n : sizes) group.tensors.push_back({.elements = n});
  return group;
}

struct Table {
  std::size_t first, last;
};

// Checks the plan's invariants for `sizes`; returns its tables.
std::vector<Table> check_plan(const std::vector<std::int64_t>& sizes) {
  const ops::UpdateGroup group = group_of(sizes);
  const std::vector<ops::UpdateChunk> chunks = ops::update_chunks(group);
  // Coverage: the chunks of each tensor tile [0, n) in order, none empty, none too long.
  std::vector<std::int64_t> next(sizes.size(), 0);
  int previous_tensor = -1;
  for (const ops::UpdateChunk& c : chunks) {
    REQUIRE(c.tensor >= previous_tensor);
    previous_tensor = c.tensor;
    CHECK(c.begin == next[static_cast<std::size_t>(c.tensor)]);
    CHECK(c.end > c.begin);
    CHECK(c.end - c.begin <= ops::kUpdateChunk);
    next[static_cast<std::size_t>(c.tensor)] = c.end;
  }
  for (std::size_t t = 0; t < sizes.size(); ++t) CHECK(next[t] == sizes[t]);
  // Tables: consecutive, covering every chunk, within the capacity.
  std::vector<Table> tables;
  ops::for_each_update_table(chunks, [&](std::size_t first, std::size_t last) {
    tables.push_back({first, last});
  });
  std::size_t covered = 0;
  for (const Table& t : tables) {
    CHECK(t.first == covered);
    CHECK(t.last > t.first);
    CHECK(t.last - t.first <= static_cast<std::size_t>(ops::kUpdateTableChunks));
    int tensors = 0;
    for (std::size_t c = t.first; c < t.last; ++c) {
      if (c == t.first || chunks[c].tensor != chunks[c - 1].tensor) ++tensors;
    }
    CHECK(tensors <= ops::kUpdateTableTensors);
    covered = t.last;
  }
  CHECK(covered == chunks.size());
  CHECK(ops::update_group_tables(group) == tables.size());
  return tables;
}

}  // namespace

TEST_SUITE("ops.update_group_plan") {
  TEST_CASE("a group's chunks cover every element once, in tables within capacity") {
    // Nothing to do: no table, no launch.
    CHECK(check_plan({}).empty());
    CHECK(check_plan({0, 0}).empty());
    // LeNet-BN's ten parameters: one table.
    CHECK(check_plan({144, 16, 16, 16, 4608, 32, 32, 32, 5120, 10}).size() == 1);
    // Tensors: 32 fit one table, 33 take two, 64 two, 65 three.
    CHECK(check_plan(std::vector<std::int64_t>(32, 100)).size() == 1);
    CHECK(check_plan(std::vector<std::int64_t>(33, 100)).size() == 2);
    CHECK(check_plan(std::vector<std::int64_t>(64, 1)).size() == 2);
    CHECK(check_plan(std::vector<std::int64_t>(65, 1)).size() == 3);
    // Chunks: 256 fit one table, one more element takes a second; a tensor may straddle two.
    const std::int64_t chunk = ops::kUpdateChunk;
    CHECK(check_plan({256 * chunk}).size() == 1);
    CHECK(check_plan({256 * chunk + 1}).size() == 2);
    const std::vector<Table> straddle = check_plan({10, 300 * chunk, 7});
    CHECK(straddle.size() == 2);
    CHECK(straddle[0].last - straddle[0].first == 256);
    // Empty tensors between others have no chunk and take no table slot.
    std::vector<std::int64_t> sparse(100, 0);
    for (std::size_t i = 0; i < sparse.size(); i += 4) sparse[i] = 5;
    CHECK(check_plan(sparse).size() == 1);  // 25 non-empty tensors
  }

  TEST_CASE("random groups keep the plan's invariants") {
    std::mt19937_64 rng(20261129);
    std::uniform_int_distribution<int> count(0, 120);
    std::uniform_int_distribution<int> kind(0, 9);
    for (int round = 0; round < 100; ++round) {
      std::vector<std::int64_t> sizes(static_cast<std::size_t>(count(rng)));
      for (std::int64_t& n : sizes) {
        const int k = kind(rng);
        n = k == 0  ? 0
            : k < 7 ? std::uniform_int_distribution<std::int64_t>(1, 5000)(rng)
            : k < 9 ? std::uniform_int_distribution<std::int64_t>(1, 20 * ops::kUpdateChunk)(rng)
                    : std::uniform_int_distribution<std::int64_t>(1, 600 * ops::kUpdateChunk)(rng);
      }
      CAPTURE(round);
      check_plan(sizes);
    }
  }
}
