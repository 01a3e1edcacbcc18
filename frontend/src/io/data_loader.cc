// DataLoader: each batch is built by ops queued on the data set's engine, never by waiting.
//
// A batch is made of fresh arrays: two CPU arrays that one gather op fills with the batch's rows
// (reading the data set's vars, writing theirs), then, for an accelerator, a copyto of each
// (host-to-device copy ops); the CPU arrays are pinned then, so those copies skip staging. The
// iterator keeps one batch built ahead: handing out batch i queues batch i + 1, so its gather
// and copies run while the caller's step for batch i does.
//
// Transforms: crops and flips happen in the gather op (io/batch_augment.h), their draws made on
// the iterating thread when the batch is queued (so they depend on the batch's place in the
// epoch, never on timing); the dtype conversion and the normalisation are ops queued on the
// batch's device after its copy.
#include "tandem/data/data_loader.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "io/batch_augment.h"
#include "io/epoch_order.h"
#include "tandem/device_info.h"
#include "tandem/errors.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/engine_scope.h"

namespace tandem::data {
namespace {

// What one gather op touches. Shared with the op, which may run after the loader and the
// caller's handles are gone: the handles here keep the arrays alive until it has run.
struct GatherJob {
  nd::NDArray data;
  nd::NDArray labels;
  nd::NDArray batch_data;
  nd::NDArray batch_labels;
  std::vector<std::int64_t> rows;
  // Crops and flips of the data's images: none when `augments` is empty.
  detail::ImageLayout layout;
  int padding = -1;
  std::vector<detail::SampleAugment> augments;

  // Runs inside the op, which declares every array's var: only here may their memory be used.
  void run() const {
    if (augments.empty()) {
      copy_rows(data, batch_data);
    } else {
      detail::gather_augmented(static_cast<const unsigned char*>(data.view().data),
                               static_cast<unsigned char*>(batch_data.view().data), rows, layout,
                               padding, augments);
    }
    copy_rows(labels, batch_labels);
  }

  void copy_rows(const nd::NDArray& source, const nd::NDArray& destination) const {
    // Both are contiguous (the loader made the data set so; batches are fresh arrays), so row r
    // is the row_bytes bytes at r * row_bytes.
    const std::size_t row_bytes =
        source.shape()[0] == 0 ? 0
                               : static_cast<std::size_t>(source.size() / source.shape()[0]) *
                                     ops::dtype_size(source.dtype());
    const auto* from = static_cast<const unsigned char*>(source.view().data);
    auto* to = static_cast<unsigned char*>(destination.view().data);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::memcpy(to + i * row_bytes, from + static_cast<std::size_t>(rows[i]) * row_bytes,
                  row_bytes);
    }
  }
};

// `array` on the CPU and contiguous: queued ops, no wait.
nd::NDArray host_contiguous(const nd::NDArray& array) {
  nd::NDArray host = array.as_in_context(cpu());
  return host.is_contiguous() ? host : host.copy();
}

nd::Shape with_rows(nd::Shape shape, std::int64_t rows) {
  shape[0] = rows;
  return shape;
}

[[noreturn]] void refuse(const nd::Shape& shape, const std::string& problem) {
  throw Error("tandem: DataLoader: transforms: " + problem + " (data of shape " +
              shape.to_string() + ")");
}

// The channels the per-channel values of mean and stddev apply to.
std::int64_t channels_of(const nd::Shape& shape) {
  return shape.ndim() == 4 ? shape[1] : 1;
}

// Checks the transforms against the data; throws tandem::Error naming what does not fit.
void check_transforms(const Transforms& t, const nd::NDArray& data) {
  const nd::Shape& shape = data.shape();
  if ((t.random_crop || t.random_flip) && shape.ndim() != 3 && shape.ndim() != 4) {
    refuse(shape, std::string(t.random_crop ? "random_crop" : "random_flip") +
                      " needs images, N x H x W or N x C x H x W");
  }
  if (t.crop_padding < 0) {
    refuse(shape, "crop_padding is " + std::to_string(t.crop_padding) + "; it must be >= 0");
  }
  if (t.crop_padding > 0 && !t.random_crop) {
    refuse(shape, "crop_padding is set but random_crop is not");
  }
  const nd::DType result = t.dtype.value_or(data.dtype());
  if (!ops::is_valid(result)) refuse(shape, "dtype is not a dtype");
  if (result == nd::uint8 && t.dtype) {
    refuse(shape, "dtype uint8 is refused (uint8 holds data only; convert to float32)");
  }
  const bool normalizes = t.scale != 1.0 || !t.mean.empty() || !t.stddev.empty();
  if (normalizes && !ops::is_floating(result)) {
    refuse(shape, std::string("scale, mean and stddev need a floating result, and the batches "
                              "would be ") +
                      nd::dtype_name(result) + " (set transforms.dtype = nd::float32)");
  }
  const std::int64_t channels = channels_of(shape);
  for (const auto* values : {&t.mean, &t.stddev}) {
    const auto count = static_cast<std::int64_t>(values->size());
    if (count > 1 && count != channels) {
      refuse(shape, std::string(values == &t.mean ? "mean" : "stddev") + " has " +
                        std::to_string(count) + " values; give 1, or one per channel (" +
                        std::to_string(channels) + ", axis 1)");
    }
  }
  for (const double value : t.stddev) {
    if (!(value > 0)) {
      refuse(shape, "stddev holds " + std::to_string(value) + "; every value must be > 0");
    }
  }
}

}  // namespace

struct DataLoader::Epoch {
  nd::NDArray data;
  nd::NDArray labels;
  Device device;
  Transforms transforms;
  nd::NDArray normalize_factor;
  nd::NDArray normalize_offset;
  std::int64_t epoch_index = 0;
  int shard = 0;
  std::int64_t batch_size = 1;
  std::vector<std::int64_t> order;  // the samples of this epoch, in the order they are served
  std::int64_t num_batches = 0;
  std::int64_t current = 0;  // the batch `batch` holds
  Batch batch;
  Batch next;  // batch current + 1, queued already (empty past the last)

  // Queues the ops that build batch `index`; returns its arrays at once.
  Batch build(std::int64_t index) const {
    const auto first = static_cast<std::size_t>(index * batch_size);
    const std::size_t last = std::min(order.size(), first + static_cast<std::size_t>(batch_size));
    const auto rows = static_cast<std::int64_t>(last - first);
    Engine& engine = data.engine();
    // The batch's arrays live on the data set's engine. A scope only when the thread is on
    // another one: closing the last scope on an engine resets its default random generator.
    std::optional<nd::EngineScope> scope;
    if (&nd::current_engine() != &engine) {
      scope.emplace(engine);
    }
    // Host batches bound for an accelerator are pinned: their copies then run straight from
    // them at the bus's speed, with no staging (PyTorch's pin_memory=True).
    const nd::HostMemory memory =
        device.is_accelerator() ? nd::HostMemory::pinned : nd::HostMemory::pageable;
    auto job = std::make_shared<GatherJob>(
        GatherJob{data,
                  labels,
                  nd::empty(with_rows(data.shape(), rows), data.dtype(), cpu(), memory),
                  nd::empty(with_rows(labels.shape(), rows), labels.dtype(), cpu(), memory),
                  std::vector<std::int64_t>(order.begin() + static_cast<std::ptrdiff_t>(first),
                                            order.begin() + static_cast<std::ptrdiff_t>(last)),
                  {},
                  -1,
                  {}});
    if (transforms.random_crop || transforms.random_flip) {
      const nd::Shape& shape = data.shape();
      job->layout = {channels_of(shape), shape[shape.ndim() - 2], shape[shape.ndim() - 1],
                     ops::dtype_size(data.dtype())};
      job->padding = transforms.random_crop ? transforms.crop_padding : -1;
      job->augments = detail::draw_augments(transforms.seed, epoch_index, index, shard, rows,
                                            job->padding, transforms.random_flip);
    }
    // Priority: the gather is short and the next step waits for it; it must not queue behind
    // the long compute ops of the current step.
    engine.push([job] { job->run(); }, cpu(), {data.var(), labels.var()},
                {job->batch_data.var(), job->batch_labels.var()},
                {.name = "data_loader_gather", .priority = 1});
    if (device == cpu()) {
      return {convert(job->batch_data), job->batch_labels};
    }
    return {convert(job->batch_data.copyto(device)), job->batch_labels.copyto(device)};
  }

  // Steps 3 and 4 of the transforms, queued on the batch's device.
  nd::NDArray convert(nd::NDArray x) const {
    if (transforms.dtype && *transforms.dtype != x.dtype()) x = x.astype(*transforms.dtype);
    if (normalize_factor.defined()) x = x * normalize_factor + normalize_offset;
    return x;
  }
};

DataLoader::DataLoader(nd::NDArray data, nd::NDArray labels, DataLoaderOptions options)
    : options_(options) {
  if (!data.defined() || !labels.defined()) {
    throw Error("tandem: DataLoader: the data or the labels are a null NDArray");
  }
  if (data.ndim() == 0 || labels.ndim() == 0) {
    throw Error("tandem: DataLoader: data (shape " + data.shape().to_string() + ") and labels " +
                "(shape " + labels.shape().to_string() + ") need one row per sample along a " +
                "first axis; a 0-d array has none");
  }
  if (data.shape()[0] != labels.shape()[0]) {
    throw Error("tandem: DataLoader: data has " + std::to_string(data.shape()[0]) +
                " samples (shape " + data.shape().to_string() + "), labels have " +
                std::to_string(labels.shape()[0]) + " (shape " + labels.shape().to_string() +
                "); each sample needs one label row");
  }
  if (data.shape()[0] == 0) {
    throw Error("tandem: DataLoader: the data set is empty (shape " + data.shape().to_string() +
                ")");
  }
  if (options.batch_size < 1) {
    throw Error("tandem: DataLoader: batch_size is " + std::to_string(options.batch_size) +
                "; it must be at least 1");
  }
  if (options.device.id < 0 || options.device.id >= device_count(options.device.kind)) {
    throw Error("tandem: DataLoader: device " + to_string(options.device) +
                " is not available (device_count is " +
                std::to_string(device_count(options.device.kind)) + ")");
  }
  if (&data.engine() != &labels.engine()) {
    throw Error("tandem: DataLoader: the data and the labels are arrays of two different engines");
  }
  check_transforms(options_.transforms, data);
  data_ = host_contiguous(data);
  labels_ = host_contiguous(labels);
  const Transforms& t = options_.transforms;
  if (t.scale != 1.0 || !t.mean.empty() || !t.stddev.empty()) {
    // x * scale, minus mean, over stddev = x * (scale / stddev) + (-mean / stddev), per channel.
    const std::int64_t channels =
        std::max({std::int64_t{1}, static_cast<std::int64_t>(t.mean.size()),
                  static_cast<std::int64_t>(t.stddev.size())});
    std::vector<double> factor(static_cast<std::size_t>(channels));
    std::vector<double> offset(factor.size());
    for (std::size_t c = 0; c < factor.size(); ++c) {
      const double mean = t.mean.empty() ? 0.0 : t.mean[t.mean.size() == 1 ? 0 : c];
      const double stddev = t.stddev.empty() ? 1.0 : t.stddev[t.stddev.size() == 1 ? 0 : c];
      factor[c] = t.scale / stddev;
      offset[c] = -mean / stddev;
    }
    // Per channel along axis 1 of N x C x H x W: C x 1 x 1; else one value for all.
    const nd::Shape shape = channels > 1 ? nd::Shape{channels, 1, 1} : nd::Shape{1};
    const nd::DType dtype = t.dtype.value_or(data.dtype());
    std::optional<nd::EngineScope> scope;
    if (&nd::current_engine() != &data.engine()) scope.emplace(data.engine());
    normalize_factor_ = nd::from_vector(factor, shape).astype(dtype).as_in_context(options_.device);
    normalize_offset_ = nd::from_vector(offset, shape).astype(dtype).as_in_context(options_.device);
  }
  num_samples_ = data.shape()[0];
  if (options_.num_shards < 1 || options_.shard < 0 || options_.shard >= options_.num_shards) {
    throw Error("tandem: DataLoader: shard " + std::to_string(options_.shard) + " of " +
                std::to_string(options_.num_shards) +
                " shards: need num_shards >= 1 and 0 <= shard < num_shards");
  }
  if (num_samples_ < options_.num_shards) {
    throw Error("tandem: DataLoader: " + std::to_string(num_samples_) + " samples cannot be " +
                "dealt out to " + std::to_string(options_.num_shards) + " shards");
  }
}

std::int64_t DataLoader::batches_in_next_epoch() const {
  const auto samples = shard_samples() + static_cast<std::int64_t>(left_over_.size());
  const std::int64_t full = samples / options_.batch_size;
  const bool partial = samples % options_.batch_size != 0;
  return full + (options_.last_batch == LastBatch::keep && partial ? 1 : 0);
}

DataLoader::Iterator DataLoader::begin() {
  auto epoch = std::make_shared<Epoch>();
  epoch->data = data_;
  epoch->labels = labels_;
  epoch->device = options_.device;
  epoch->transforms = options_.transforms;
  epoch->normalize_factor = normalize_factor_;
  epoch->normalize_offset = normalize_offset_;
  epoch->epoch_index = epochs_started_;
  epoch->shard = options_.shard;
  epoch->batch_size = options_.batch_size;
  epoch->num_batches = batches_in_next_epoch();
  epoch->order = std::move(left_over_);
  left_over_.clear();
  std::vector<std::int64_t> fresh =
      detail::epoch_order(num_samples_, options_.shuffle, options_.seed, epochs_started_);
  if (options_.num_shards > 1) {
    std::vector<std::int64_t> mine;
    mine.reserve(static_cast<std::size_t>(shard_samples()));
    for (std::int64_t i = 0; i < shard_samples(); ++i)
      mine.push_back(fresh[static_cast<std::size_t>(i * options_.num_shards + options_.shard)]);
    fresh = std::move(mine);
  }
  epoch->order.insert(epoch->order.end(), fresh.begin(), fresh.end());
  ++epochs_started_;
  const auto served = static_cast<std::size_t>(std::min<std::int64_t>(
      epoch->num_batches * options_.batch_size, static_cast<std::int64_t>(epoch->order.size())));
  if (options_.last_batch == LastBatch::rollover) {
    left_over_.assign(epoch->order.begin() + static_cast<std::ptrdiff_t>(served),
                      epoch->order.end());
  }
  epoch->order.resize(served);
  if (epoch->num_batches > 0) {
    epoch->batch = epoch->build(0);
  }
  if (epoch->num_batches > 1) {
    epoch->next = epoch->build(1);
  }
  return Iterator(std::move(epoch));
}

bool DataLoader::Iterator::at_end() const {
  return !epoch_ || epoch_->current >= epoch_->num_batches;
}

const Batch& DataLoader::Iterator::operator*() const {
  if (at_end()) {
    throw Error("tandem: DataLoader: dereferencing an iterator past the last batch of its epoch");
  }
  return epoch_->batch;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (at_end()) {
    throw Error("tandem: DataLoader: advancing an iterator past the last batch of its epoch");
  }
  Epoch& epoch = *epoch_;
  ++epoch.current;
  epoch.batch = std::move(epoch.next);
  epoch.next = {};
  if (epoch.current + 1 < epoch.num_batches) {
    epoch.next = epoch.build(epoch.current + 1);
  }
  return *this;
}

std::int64_t DataLoader::Iterator::index() const {
  return epoch_ ? epoch_->current : 0;
}

}  // namespace tandem::data
