// How a grouped optimizer update (tandem/ops/update_group.h) is cut into work: chunks of at most
// kUpdateChunk elements of one tensor, in tensor order, and the CUDA kernel's launch tables of at
// most kUpdateTableTensors tensors and kUpdateTableChunks chunks (a table travels as the kernel's
// argument, which must stay under the 4 KiB every CUDA version accepts). The CPU kernel runs the
// chunks as parallel blocks; the CUDA kernel runs one block per chunk and one launch per table;
// sim counts the launches from the same plan, so the profiler's counts and the tests that pin
// them see what a GPU would launch.
#pragma once

#include <cstdint>
#include <vector>

#include "tandem/ops/update_group.h"

namespace tandem::ops {

inline constexpr std::int64_t kUpdateChunk = 32 * 1024;
inline constexpr int kUpdateTableTensors = 32;
inline constexpr int kUpdateTableChunks = 256;

struct UpdateChunk {
  int tensor = 0;          // index into UpdateGroup::tensors
  std::int64_t begin = 0;  // element range [begin, end) of that tensor
  std::int64_t end = 0;
};

// Every chunk of the group, tensor by tensor; an empty tensor has none.
inline std::vector<UpdateChunk> update_chunks(const UpdateGroup& group) {
  std::vector<UpdateChunk> chunks;
  for (std::size_t t = 0; t < group.tensors.size(); ++t) {
    const std::int64_t n = group.tensors[t].elements;
    for (std::int64_t begin = 0; begin < n; begin += kUpdateChunk) {
      chunks.push_back(
          {static_cast<int>(t), begin, begin + kUpdateChunk < n ? begin + kUpdateChunk : n});
    }
  }
  return chunks;
}

// Calls table(first, last) for each launch table: chunks [first, last) of `chunks`, at most
// kUpdateTableChunks of them, from at most kUpdateTableTensors tensors. A tensor's chunks may
// be split across two tables.
template <class Table>
void for_each_update_table(const std::vector<UpdateChunk>& chunks, Table&& table) {
  std::size_t first = 0;
  int tensors = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const bool new_tensor = i == first || chunks[i].tensor != chunks[i - 1].tensor;
    const bool full = i - first == static_cast<std::size_t>(kUpdateTableChunks) ||
                      (new_tensor && tensors == kUpdateTableTensors);
    if (full) {
      table(first, i);
      first = i;
      tensors = 0;
    }
    if (new_tensor || full) ++tensors;
  }
  if (first < chunks.size()) table(first, chunks.size());
}

// The kernel launches of the CUDA kernel for `group`: one per table.
inline std::uint32_t update_group_tables(const UpdateGroup& group) {
  std::uint32_t tables = 0;
  for_each_update_table(update_chunks(group), [&](std::size_t, std::size_t) { ++tables; });
  return tables;
}

}  // namespace tandem::ops
