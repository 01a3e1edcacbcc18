// PriorityReadyQueue: ready ops ordered by priority (higher first), FIFO among equals. Used
// for the ops that are not plain priority-0 compute (those take the lock-free FIFO lane), so
// the mutex here is off the common path.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <queue>
#include <vector>

#include "tandem/detail/op_record.h"

namespace tandem::detail {

class PriorityReadyQueue {
 public:
  void push(OpRecord* op) {
    std::lock_guard lock(mutex_);
    op->ready_sequence = next_sequence_++;
    heap_.push(op);
    size_.store(heap_.size(), std::memory_order_release);
  }
  // Null when empty.
  OpRecord* pop() {
    if (size_.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard lock(mutex_);
    if (heap_.empty()) return nullptr;
    OpRecord* op = heap_.top();
    heap_.pop();
    size_.store(heap_.size(), std::memory_order_release);
    return op;
  }
  bool empty() const { return size_.load(std::memory_order_acquire) == 0; }

 private:
  struct RunsLater {
    bool operator()(const OpRecord* a, const OpRecord* b) const {
      if (a->props.priority != b->props.priority) return a->props.priority < b->props.priority;
      return a->ready_sequence > b->ready_sequence;
    }
  };
  std::mutex mutex_;
  std::uint64_t next_sequence_ = 0;
  std::priority_queue<OpRecord*, std::vector<OpRecord*>, RunsLater> heap_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace tandem::detail
