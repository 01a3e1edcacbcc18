// Ring allreduce as ordinary queued ops on views of the arrays: `chunk += neighbour's chunk
// copied here` and `chunk.copyto(neighbour's chunk)`. Correctness rests on the engine's order
// of ops on one array (program order of the writes and reads of each array's var), so the
// loops below only have to push the steps in ring order.
//
// Invariant after reduce-scatter step s (0-based): device d's chunk (d - s - 1) mod D holds the
// sum of the s + 2 arrays d - s - 1 .. d (mod D) for that chunk; after the D - 1 steps device d
// holds the full sum of chunk (d + 1) mod D. All-gather step s copies from device d to d + 1 the
// finished chunk (d + 1 - s) mod D, which device d has held since step s - 1 (or since the
// reduce-scatter for s = 0).
#include "distributed/ring_allreduce.h"

#include <cstdint>
#include <string>

#include "core/transfer.h"
#include "tandem/errors.h"

namespace tandem::nd::detail {

namespace {

struct ChunkBounds {
  std::int64_t begin = 0;
  std::int64_t end = 0;
};

// Chunk `c` of `count` over `elements`: (elements / count) each, the first (elements % count)
// one more, so chunks differ by at most one element and some are empty when elements < count.
ChunkBounds chunk_bounds(std::int64_t elements, std::int64_t count, std::int64_t c) {
  const std::int64_t base = elements / count;
  const std::int64_t extra = elements % count;
  const std::int64_t begin = c * base + (c < extra ? c : extra);
  return {begin, begin + base + (c < extra ? 1 : 0)};
}

std::string why_not_ring(const std::vector<NDArray>& arrays) {
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (!arrays[i].is_contiguous()) {
      return "array " + std::to_string(i) + " (shape " + arrays[i].shape().to_string() +
             ") is not contiguous; the ring writes its chunks as views";
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (arrays[j].device() == arrays[i].device()) {
        return "arrays " + std::to_string(j) + " and " + std::to_string(i) + " are both on " +
               to_string(arrays[i].device()) + "; the ring needs one device per array";
      }
    }
    const Device from = arrays[i].device();
    const Device to = arrays[(i + 1) % arrays.size()].device();
    if (from.is_accelerator() && to.is_accelerator() && from.kind != to.kind) {
      return "no copy path from " + to_string(from) + " to its ring neighbour " + to_string(to);
    }
  }
  return {};
}

}  // namespace

bool ring_fits(const std::vector<NDArray>& arrays) {
  return why_not_ring(arrays).empty();
}

void check_ring(const char* op, const std::vector<NDArray>& arrays) {
  const std::string reason = why_not_ring(arrays);
  if (reason.empty()) return;
  throw Error(std::string("tandem: ") + op + ": cannot run the ring algorithm: " + reason +
              " (use AllreduceAlgorithm::gather or automatic)");
}

void ring_allreduce(const std::vector<NDArray>& arrays) {
  const auto count = static_cast<std::int64_t>(arrays.size());
  const std::int64_t elements = arrays.front().size();
  std::vector<NDArray> flat;
  flat.reserve(arrays.size());
  for (const NDArray& array : arrays) flat.push_back(array.reshape(Shape{elements}));
  const auto wrap = [count](std::int64_t index) { return ((index % count) + count) % count; };
  const auto chunk_of = [&](std::int64_t device, const ChunkBounds& bounds) {
    return flat[static_cast<std::size_t>(wrap(device))].slice(bounds.begin, bounds.end);
  };
  for (std::int64_t step = 0; step + 1 < count; ++step) {
    for (std::int64_t d = 0; d < count; ++d) {
      const ChunkBounds bounds = chunk_bounds(elements, count, wrap(d - step));
      if (bounds.begin == bounds.end) continue;
      NDArray into = chunk_of(d + 1, bounds);
      into += copy_to_device_named(chunk_of(d, bounds), into.device(), "allreduce");
    }
  }
  for (std::int64_t step = 0; step + 1 < count; ++step) {
    for (std::int64_t d = 0; d < count; ++d) {
      const ChunkBounds bounds = chunk_bounds(elements, count, wrap(d + 1 - step));
      if (bounds.begin == bounds.end) continue;
      copy_into_named(chunk_of(d, bounds), chunk_of(d + 1, bounds), "allreduce");
    }
  }
}

}  // namespace tandem::nd::detail
