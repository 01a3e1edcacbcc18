// The random crops and flips of the DataLoader's transforms, done while gathering a batch's rows
// on the CPU: one pass that reads each output pixel from one input pixel (or writes a zero of
// the padding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::data::detail {

// One image of a sample: channels x height x width elements of element_size bytes.
struct ImageLayout {
  std::int64_t channels = 1;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::size_t element_size = 0;
};

// What is done to one image: the crop window's top-left corner in the padded image (0 and 0
// with no crop or, with padding p, each in 0..2p), and whether it is mirrored left-right.
struct SampleAugment {
  std::int64_t top = 0;
  std::int64_t left = 0;
  bool flip = false;
};

// The augments of the `rows` images of one batch: a function of (seed, epoch, batch, shard)
// alone. `padding` < 0 means no crop; `flip` false means no flips.
std::vector<SampleAugment> draw_augments(std::uint64_t seed, std::int64_t epoch, std::int64_t batch,
                                         int shard, std::int64_t rows, int padding, bool flip);

// Writes, for each i, image rows[i] of `source` (images back to back) cropped and flipped as
// augments[i] says, to image i of `destination`. With padding p, output pixel (y, x) of a
// channel is the source's pixel (y + top - p, x' + left - p), x' = width - 1 - x when flipped,
// else x; a pixel outside the source is zero.
void gather_augmented(const unsigned char* source, unsigned char* destination,
                      const std::vector<std::int64_t>& rows, const ImageLayout& layout, int padding,
                      const std::vector<SampleAugment>& augments);

}  // namespace tandem::data::detail
