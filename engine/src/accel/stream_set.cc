#include "tandem/accel/stream_set.h"

#include <exception>
#include <string>
#include <utility>

#include "tandem/errors.h"

namespace tandem {

namespace {

constexpr Queue kSingleQueues[] = {Queue::copy_h2d, Queue::copy_d2h, Queue::copy_d2d, Queue::comm};
static_assert(static_cast<int>(Queue::compute) == 0 && static_cast<int>(Queue::copy_h2d) == 1 &&
                  static_cast<int>(Queue::comm) == 4,
              "StreamSet::single_ is indexed by the queue's value minus one");

}  // namespace

StreamSet::StreamSet(Device device, int compute_streams, const MakeStream& make) {
  if (compute_streams < 1) {
    std::string text = "tandem: ";
    text += to_string(device);
    text += ": compute_streams must be at least 1, got ";
    text += std::to_string(compute_streams);
    throw Error(text);
  }
  for (int i = 0; i < compute_streams; ++i) {
    compute_.push_back(make(Queue::compute, i, name(device, Queue::compute, i)));
  }
  for (Queue queue : kSingleQueues) {
    single_[static_cast<std::size_t>(queue) - 1] = make(queue, 0, name(device, queue, 0));
  }
  staging_[0] = make(Queue::copy_h2d, 1, name(device, Queue::copy_h2d, 0) + " stage");
  staging_[1] = make(Queue::copy_d2h, 1, name(device, Queue::copy_d2h, 0) + " stage");
}

Stream& StreamSet::staging(Queue direction) {
  if (direction == Queue::copy_h2d) return *staging_[0];
  if (direction == Queue::copy_d2h) return *staging_[1];
  throw Error(std::string("tandem: only copy_h2d and copy_d2h have a staging stream, not ") +
              queue_name(direction));
}

Stream& StreamSet::stream(Queue queue, int index) {
  if (queue == Queue::compute) {
    const int n = compute_streams();
    return *compute_[static_cast<std::size_t>(((index % n) + n) % n)];
  }
  return *single_[static_cast<std::size_t>(queue) - 1];
}

std::vector<Stream*> StreamSet::all() {
  std::vector<Stream*> streams;
  for (auto& s : compute_) streams.push_back(s.get());
  for (auto& s : single_) streams.push_back(s.get());
  for (auto& s : staging_) streams.push_back(s.get());
  return streams;
}

void StreamSet::synchronize() {
  std::exception_ptr first;
  for (Stream* s : all()) {
    try {
      s->synchronize();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::string StreamSet::name(Device device, Queue queue, int index) {
  std::string text = to_string(device);
  text += ' ';
  switch (queue) {
    case Queue::compute:
      text += "compute ";
      text += std::to_string(index);
      return text;
    case Queue::copy_h2d:
      return text + "h2d";
    case Queue::copy_d2h:
      return text + "d2h";
    case Queue::copy_d2d:
      return text + "peer";
    case Queue::comm:
      return text + "comm";
  }
  return text + queue_name(queue);
}

}  // namespace tandem
