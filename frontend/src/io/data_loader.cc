// DataLoader: each batch is built by ops queued on the data set's engine, never by waiting.
//
// A batch is made of fresh arrays: two CPU arrays that one gather op fills with the batch's rows
// (reading the data set's vars, writing theirs), then, for an accelerator, a copyto of each
// (host-to-device copy ops); the CPU arrays are pinned then, so those copies skip staging. The
// iterator keeps one batch built ahead: handing out batch i queues batch i + 1, so its gather
// and copies run while the caller's step for batch i does.
#include "tandem/data/data_loader.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "io/epoch_order.h"
#include "tandem/device_info.h"
#include "tandem/errors.h"
#include "tandem/nd/creation.h"
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

  // Runs inside the op, which declares every array's var: only here may their memory be used.
  void run() const {
    copy_rows(data, batch_data);
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

}  // namespace

struct DataLoader::Epoch {
  nd::NDArray data;
  nd::NDArray labels;
  Device device;
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
    auto job = std::make_shared<GatherJob>(GatherJob{
        data, labels, nd::empty(with_rows(data.shape(), rows), data.dtype(), cpu(), memory),
        nd::empty(with_rows(labels.shape(), rows), labels.dtype(), cpu(), memory),
        std::vector<std::int64_t>(order.begin() + static_cast<std::ptrdiff_t>(first),
                                  order.begin() + static_cast<std::ptrdiff_t>(last))});
    // Priority: the gather is short and the next step waits for it; it must not queue behind
    // the long compute ops of the current step.
    engine.push([job] { job->run(); }, cpu(), {data.var(), labels.var()},
                {job->batch_data.var(), job->batch_labels.var()},
                {.name = "data_loader_gather", .priority = 1});
    if (device == cpu()) {
      return {job->batch_data, job->batch_labels};
    }
    return {job->batch_data.copyto(device), job->batch_labels.copyto(device)};
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
  data_ = host_contiguous(data);
  labels_ = host_contiguous(labels);
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
