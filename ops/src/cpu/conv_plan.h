// How the CPU convolution (convolution.cc) cuts its work: the batch into chunks of samples, and
// each chunk's gemm into a fixed grid of output tiles, one single-threaded BLAS call each.
//
// Invariant: both are functions of the geometry, the direction and the element size only, never
// of the thread count, so every output element comes out of the same BLAS calls, in the same
// order, on any number of workers (tests/frontend/conv_chunks_test.cc checks the bits).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tandem/ops/conv_geometry.h"

namespace tandem::ops::cpu {

enum class ConvDirection { forward, backward_data, backward_weight };

// Scratch of one chunk: its im2col matrix (all groups) and its output (or output gradient)
// regrouped channel-major. Small enough to stay in the last-level cache between the gather,
// the gemm and the scatter that follow each other on it.
inline constexpr std::int64_t kConvChunkBytes = std::int64_t{4} << 20;

// Forward and data gradient: a chunk needs no more samples than make its gemm this many columns
// wide (BLAS runs near its peak from there); smaller chunks mean more of them to run side by
// side, each in cache. The weight gradient sums over its chunks, so it takes the largest.
inline constexpr std::int64_t kConvMinColumns = 256;

// Forward and data gradient with at least this many chunks run one task per chunk (gather, one
// BLAS call per group, scatter); with fewer, chunk after chunk, each split into tiles.
inline constexpr std::int64_t kConvParallelChunks = 8;

// Scratch elements per sample: (in_channels * kernel taps + out_channels) x out pixels.
inline std::int64_t conv_chunk_elements_per_sample(const Conv2dGeometry& g) {
  return (g.in_channels * g.kernel_h * g.kernel_w + g.out_channels) * g.out_h * g.out_w;
}

// The most samples a chunk of `direction` takes: as many as fit kConvChunkBytes (at least one),
// and for forward and the data gradient no more than reach kConvMinColumns.
inline std::int64_t conv_most_samples(const Conv2dGeometry& g, std::size_t element,
                                      ConvDirection direction) {
  const std::int64_t per_sample = std::max<std::int64_t>(
      1, conv_chunk_elements_per_sample(g) * static_cast<std::int64_t>(element));
  std::int64_t most = std::max<std::int64_t>(1, kConvChunkBytes / per_sample);
  if (direction != ConvDirection::backward_weight) {
    const std::int64_t P = std::max<std::int64_t>(1, g.out_h * g.out_w);
    most = std::min(most, (kConvMinColumns + P - 1) / P);
  }
  return std::clamp<std::int64_t>(most, 1, std::max<std::int64_t>(g.batch, 1));
}

// Samples per chunk: the batch in as few chunks as conv_most_samples allows, of equal sizes (the
// last one smaller by less than the chunk count).
inline std::int64_t conv_chunk_samples(const Conv2dGeometry& g, std::size_t element,
                                       ConvDirection direction) {
  const std::int64_t batch = std::max<std::int64_t>(g.batch, 1);
  const std::int64_t most = conv_most_samples(g, element, direction);
  const std::int64_t chunks = (batch + most - 1) / most;
  return (batch + chunks - 1) / chunks;
}

// Whether the chunks of `direction` run side by side, one task each (else in order, each as a
// gather step, a step of gemm tiles and a scatter step).
inline bool conv_chunks_in_parallel(const Conv2dGeometry& g, std::size_t element,
                                    ConvDirection direction) {
  if (direction == ConvDirection::backward_weight) return false;  // its chunks add up in order
  const std::int64_t chunk = conv_chunk_samples(g, element, direction);
  return (g.batch + chunk - 1) / chunk >= kConvParallelChunks;
}

// A grid of row_blocks x col_blocks tiles over an m x n gemm output; tile (i, j) covers rows
// [i * tile_rows, min(m, (i + 1) * tile_rows)) and columns likewise. No tile is empty.
struct TileGrid {
  std::int64_t tile_rows = 1, tile_cols = 1;
  std::int64_t row_blocks = 1, col_blocks = 1;
  std::int64_t tiles() const { return row_blocks * col_blocks; }
};

// At most 16 tiles (enough for a machine's cores), each at least 128 x 128 outputs when there
// are two or more: a tile packs its rows of a and its columns of b itself, and below that area
// the packing costs more than the second core gains. Among the grids with the most tiles, the
// squarest (least packing per output). Tile sides are multiples of 16 (the BLAS kernels' unroll)
// where they are larger than 16.
inline TileGrid gemm_tile_grid(std::int64_t m, std::int64_t n) {
  constexpr std::int64_t kMaxTiles = 16, kMinTileArea = 128 * 128, kAlign = 16;
  const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  const auto side = [&](std::int64_t extent, std::int64_t blocks) {
    const std::int64_t s = ceil_div(extent, blocks);
    return s > kAlign ? ceil_div(s, kAlign) * kAlign : s;
  };
  TileGrid best{std::max<std::int64_t>(m, 1), std::max<std::int64_t>(n, 1), 1, 1};
  double best_packing = 0;  // (rows + cols) / area of the best grid's tile
  for (std::int64_t rb = 1; rb <= kMaxTiles; ++rb) {
    for (std::int64_t cb = 1; rb * cb <= kMaxTiles; ++cb) {
      if (rb * cb == 1) continue;
      const std::int64_t rows = side(m, rb), cols = side(n, cb);
      if (rows * cols < kMinTileArea) continue;
      const TileGrid grid{rows, cols, ceil_div(m, rows), ceil_div(n, cols)};
      const double packing = static_cast<double>(rows + cols) / static_cast<double>(rows * cols);
      if (grid.tiles() > best.tiles() || (grid.tiles() == best.tiles() && packing < best_packing)) {
        best = grid;
        best_packing = packing;
      }
    }
  }
  return best;
}

}  // namespace tandem::ops::cpu
