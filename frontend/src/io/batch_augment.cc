#include "io/batch_augment.h"

#include <cstring>
#include <random>

namespace tandem::data::detail {
namespace {

// SplitMix64's finaliser: spreads (seed, epoch, batch, shard) over the generator's seed.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Elements are moved as `Size` bytes (memcpy of a constant size: one load and store), so the
// pixels of any dtype are copied without reading them as another type.
template <std::size_t Size>
void gather_sized(const unsigned char* source, unsigned char* destination,
                  const std::vector<std::int64_t>& rows, const ImageLayout& layout, int padding,
                  const std::vector<SampleAugment>& augments) {
  const std::int64_t h = layout.height, w = layout.width;
  const std::int64_t plane = h * w, image = layout.channels * plane;
  const std::int64_t pad = padding < 0 ? 0 : padding;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SampleAugment& a = augments[i];
    const unsigned char* in = source + static_cast<std::size_t>(rows[i] * image) * Size;
    unsigned char* out =
        destination + static_cast<std::size_t>(static_cast<std::int64_t>(i) * image) * Size;
    for (std::int64_t c = 0; c < layout.channels; ++c) {
      for (std::int64_t y = 0; y < h; ++y) {
        const std::int64_t sy = y + a.top - pad;
        unsigned char* line = out + static_cast<std::size_t>(c * plane + y * w) * Size;
        if (sy < 0 || sy >= h) {
          std::memset(line, 0, static_cast<std::size_t>(w) * Size);
          continue;
        }
        const unsigned char* source_line = in + static_cast<std::size_t>(c * plane + sy * w) * Size;
        for (std::int64_t x = 0; x < w; ++x) {
          const std::int64_t sx = (a.flip ? w - 1 - x : x) + a.left - pad;
          unsigned char* to = line + static_cast<std::size_t>(x) * Size;
          if (sx < 0 || sx >= w) {
            std::memset(to, 0, Size);
          } else {
            std::memcpy(to, source_line + static_cast<std::size_t>(sx) * Size, Size);
          }
        }
      }
    }
  }
}

}  // namespace

std::vector<SampleAugment> draw_augments(std::uint64_t seed, std::int64_t epoch, std::int64_t batch,
                                         int shard, std::int64_t rows, int padding, bool flip) {
  std::mt19937_64 generator(mix(
      seed ^ mix(static_cast<std::uint64_t>(epoch) ^
                 mix(static_cast<std::uint64_t>(batch) ^ mix(static_cast<std::uint64_t>(shard))))));
  std::vector<SampleAugment> augments(static_cast<std::size_t>(rows));
  const auto span = static_cast<std::uint64_t>(2 * (padding < 0 ? 0 : padding) + 1);
  for (SampleAugment& a : augments) {
    // Three draws per image whatever the options, so turning one transform on or off does not
    // change the others' draws. The modulo's bias is below 2^-50 for any padding.
    const std::uint64_t top = generator(), left = generator(), mirror = generator();
    a.top = padding < 0 ? 0 : static_cast<std::int64_t>(top % span);
    a.left = padding < 0 ? 0 : static_cast<std::int64_t>(left % span);
    a.flip = flip && (mirror >> 63) != 0;
  }
  return augments;
}

void gather_augmented(const unsigned char* source, unsigned char* destination,
                      const std::vector<std::int64_t>& rows, const ImageLayout& layout, int padding,
                      const std::vector<SampleAugment>& augments) {
  switch (layout.element_size) {
    case 1:
      return gather_sized<1>(source, destination, rows, layout, padding, augments);
    case 4:
      return gather_sized<4>(source, destination, rows, layout, padding, augments);
    default:
      return gather_sized<8>(source, destination, rows, layout, padding, augments);
  }
}

}  // namespace tandem::data::detail
