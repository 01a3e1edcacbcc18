// parallel_blocks: the one way CPU kernels split work across threads.
//
// An op body runs on one of the engine's workers, inside the engine's oneTBB arena; a
// tbb::parallel_for started there hands its chunks to the same arena, so intra-op and inter-op
// parallelism share the cores and never oversubscribe them. `isolate` keeps a thread that waits
// for its chunks from picking up unrelated work (another engine drainer) meanwhile.
//
// Invariant: the blocks are a function of (n, block) only, never of the thread count, so a
// kernel that combines per-block results in block order gives the same bits on any engine.
#pragma once

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cstdint>

namespace tandem::ops::cpu {

// Below this many elements an element-wise kernel runs serially: a parallel_for costs a few
// microseconds, more than the work itself.
inline constexpr std::int64_t kElementwiseBlock = 32 * 1024;

inline std::int64_t num_blocks(std::int64_t n, std::int64_t block) {
  return n <= 0 ? 0 : (n + block - 1) / block;
}

// Calls body(block_index, begin, end) for each block [i * block, min(n, (i + 1) * block)).
template <class Body>
void parallel_blocks(std::int64_t n, std::int64_t block, Body&& body) {
  const std::int64_t blocks = num_blocks(n, block);
  if (blocks == 0) return;
  if (blocks == 1) {
    body(std::int64_t{0}, std::int64_t{0}, n);
    return;
  }
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::int64_t>(0, blocks, 1),
        [&](const tbb::blocked_range<std::int64_t>& range) {
          for (std::int64_t i = range.begin(); i != range.end(); ++i) {
            body(i, i * block, std::min(n, (i + 1) * block));
          }
        },
        tbb::simple_partitioner());
  });
}

}  // namespace tandem::ops::cpu
