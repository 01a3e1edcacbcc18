// DataLoader: mini-batches of an in-memory data set, shuffled per epoch, copied to a device
// ahead of use (Gluon's DataLoader over an ArrayDataset).
//
//   data::DataLoader loader(images, labels, {.batch_size = 64, .shuffle = true, .seed = 1,
//                                            .device = tandem::sim(0)});
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     for (const data::Batch& batch : loader) {   // each `for` over the loader is one epoch
//       auto loss = step(batch.data, batch.label);  // on sim(0)
//     }
//   }
//
// Prefetch: when the iterator hands out batch i, the ops that build batch i + 1 (a gather of
// its rows on the CPU, on the priority lane, then its host-to-device copies) are already
// queued, so they overlap the work the caller queues for batch i. Nothing on the iteration
// path waits: every step is an engine op ordered by the arrays' vars, and a batch is a fresh
// pair of arrays, so the caller may keep or modify any batch.
//
// Shuffling is reproducible: epoch e's order is a function of (seed, e) alone, through a
// generator whose output the C++ standard fixes (std::mt19937_64) and a Fisher-Yates shuffle
// written here, so it is the same with every compiler and standard library.
//
// Transforms (torchvision's RandomCrop with padding, RandomHorizontalFlip, ToTensor, Normalize)
// are part of building a batch, so they are prefetched with it:
//
//   data::DataLoader loader(images_u8, labels, {.batch_size = 256, .shuffle = true, .seed = 1,
//                           .device = tandem::cuda(0),
//                           .transforms = {.random_crop = true, .crop_padding = 4,
//                                          .random_flip = true, .dtype = nd::float32,
//                                          .scale = 1.0 / 255, .mean = {0.286},
//                                          .stddev = {0.353}, .seed = 7}});
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "tandem/device.h"
#include "tandem/nd/ndarray.h"

namespace tandem::data {

// What to do with the samples after the last full batch of an epoch (Gluon's last_batch).
enum class LastBatch {
  keep,      // a last, smaller batch
  discard,   // drop them
  rollover,  // put them first in the next epoch (the epoch after next sees them once more)
};

// What is done to each batch's data (never to its labels), in this order:
// 1. random_crop: each image is padded with `crop_padding` zero pixels on every side and an
//    H x W window is cut from it at a random place (each offset uniform in 0..2 * crop_padding).
// 2. random_flip: each image is mirrored left-right with probability 1/2.
// 3. dtype, scale: astype(dtype) (when set and different), then a multiplication by `scale`.
// 4. mean, stddev: (x - mean) / stddev; one value for every channel, or one per channel (axis 1
//    of N x C x H x W data). An empty mean is 0, an empty stddev 1.
// Steps 1 and 2 need images, N x H x W or N x C x H x W. They run inside the gather op that
// builds the batch on the CPU (each output pixel is a read of one input pixel, so they cost
// nothing beyond the gather; the batch then crosses to the device with its final pixels).
// Steps 3 and 4 are engine ops on the batch's device, after its copy (two ops: the astype and
// one fused multiply-add x * (scale / stddev) + (-mean / stddev), broadcast per channel), so
// uint8 images cross the bus at a quarter of float32's bytes.
// Reproducible: the offsets and flips of batch b of epoch e are a function of
// (seed, e, b, shard) alone (std::mt19937_64, whose output the standard fixes), whatever the
// device, the timing or the order in which batches are consumed.
struct Transforms {
  bool random_crop = false;
  int crop_padding = 0;
  bool random_flip = false;
  std::optional<nd::DType> dtype{};  // unset: the data's dtype
  double scale = 1.0;
  std::vector<double> mean{};
  std::vector<double> stddev{};
  std::uint64_t seed = 0;
};

struct DataLoaderOptions {
  std::int64_t batch_size = 1;
  bool shuffle = false;
  std::uint64_t seed = 0;
  LastBatch last_batch = LastBatch::keep;
  Device device = cpu();  // where the batches are
  // Data parallelism across processes (PyTorch's DistributedSampler with drop_last): each of
  // `num_shards` processes passes its own `shard` (its rank) and the same seed. Every epoch's
  // order (the shared permutation of (seed, epoch)) is dealt out like cards: process `shard`
  // takes its positions shard, shard + num_shards, ..., so the shards are disjoint, of equal
  // size (the last n % num_shards positions of the permutation are left out that epoch), and
  // reshuffled every epoch alike on every process. Batch k of every shard together is batch k
  // of one process with batch_size * num_shards.
  int num_shards = 1;
  int shard = 0;
  // Applied to every batch's data; the default does nothing.
  Transforms transforms{};
};

// One mini-batch: `batch_size` rows of the data and the same rows of the labels.
struct Batch {
  nd::NDArray data;
  nd::NDArray label;
};

class DataLoader {
 public:
  // `data` and `labels` have one row per sample along their first axis (labels may be 1-D).
  // They may be on any device and still being computed: they are moved to the CPU (a queued
  // copy) and made contiguous once, here, without waiting. Throws tandem::Error when the row
  // counts differ, the data set is empty, batch_size < 1, or the device is not present, and for
  // transforms the data cannot take: crops or flips of data that are not images (N x H x W or
  // N x C x H x W), a negative crop_padding, a mean or stddev with neither 1 nor C values, a
  // stddev that is not positive, a scale, mean or stddev on an integer (or uint8) result
  // dtype, or dtype uint8.
  DataLoader(nd::NDArray data, nd::NDArray labels, DataLoaderOptions options);

  class Iterator;

  // Starts the next epoch: fixes its order and queues its first two batches.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

  std::int64_t num_samples() const { return num_samples_; }
  // The epochs started so far (calls to begin()).
  std::int64_t epochs_started() const { return epochs_started_; }
  // The number of batches the next epoch will have (with rollover it depends on the samples
  // the previous epochs left over).
  std::int64_t batches_in_next_epoch() const;
  const DataLoaderOptions& options() const { return options_; }

 private:
  struct Epoch;

  nd::NDArray data_;
  nd::NDArray labels_;
  DataLoaderOptions options_;
  std::int64_t num_samples_ = 0;
  std::int64_t epochs_started_ = 0;
  std::int64_t shard_samples() const { return num_samples_ / options_.num_shards; }
  std::vector<std::int64_t> left_over_;  // rollover: the samples carried into the next epoch
  // The fused normalisation's factor and offset (shape C x 1 x 1 or 1), on options_.device;
  // undefined when there is none.
  nd::NDArray normalize_factor_;
  nd::NDArray normalize_offset_;
};

// An input iterator over one epoch's batches. Copies share the epoch: advancing one advances
// them all.
class DataLoader::Iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Batch;
  using difference_type = std::ptrdiff_t;
  using pointer = const Batch*;
  using reference = const Batch&;

  Iterator() = default;
  const Batch& operator*() const;
  const Batch* operator->() const { return &**this; }
  // Hands out the prefetched batch and queues the one after it.
  Iterator& operator++();
  void operator++(int) { ++*this; }
  // The batch's position in the epoch (0 for the first).
  std::int64_t index() const;
  friend bool operator==(const Iterator& it, std::default_sentinel_t) { return it.at_end(); }

 private:
  friend class DataLoader;
  explicit Iterator(std::shared_ptr<Epoch> epoch) : epoch_(std::move(epoch)) {}
  bool at_end() const;

  std::shared_ptr<Epoch> epoch_;
};

}  // namespace tandem::data
