#include "stream_chooser.h"

#include "device_work.h"
#include "var_state.h"

namespace tandem::detail {

Stream& StreamChooser::choose(Accelerator& device, const OpRecord& op) {
  if (op.props.queue != Queue::compute) return device.stream(op.props.queue);
  if (Stream* producer = producer_stream(device, op)) return *producer;
  const int n = device.compute_streams();
  const int index = next_compute_;
  next_compute_ = index + 1 >= n ? 0 : index + 1;
  return device.stream(Queue::compute, index);
}

Stream* StreamChooser::producer_stream(Accelerator& device, const OpRecord& op) {
  // Only ops granted on a fenced var can have a producer (see VarState::fenced).
  if (!op.needs_fence_sync.load(std::memory_order_relaxed)) return nullptr;
  const Device here = device.device();
  for (std::uint32_t i = 0; i < op.num_slots; ++i) {
    VarState* var = op.slots[i].var;
    const Stream* producer = nullptr;
    var->lock.lock();
    if (var->fenced && var->fences->write != nullptr) producer = var->fences->write->stream;
    var->lock.unlock();
    if (producer != nullptr && producer->queue() == Queue::compute && producer->device() == here) {
      // The stream belongs to `device`: look it up there rather than cast constness away.
      return &device.stream(Queue::compute, producer->index());
    }
  }
  return nullptr;
}

}  // namespace tandem::detail
