// ReadyFifo: the FIFO of ready priority-0 compute ops, the busiest queue of the engine.
//
// Producers (any thread that makes an op ready) link ops in with one atomic exchange on `tail_`
// and never wait. Consumers (drainers) take ops under a spin lock, one at a time. The queue is
// intrusive (linked through OpRecord::next_ready), so it allocates nothing; a stub record marks
// the empty queue. This is the well-known intrusive MPSC queue of D. Vyukov, made multi-consumer
// by the consumer lock.
//
// Invariants: `head_` (consumer side, guarded by `consumer_lock_`) is the oldest record still
// linked; the queue is empty exactly when `tail_` is the stub. Between a producer's exchange
// and its link store the chain is briefly broken; pop then returns null and the caller polls
// again (the op is not lost: `empty()` stays false until it is taken).
#pragma once

#include <atomic>
#include <mutex>

#include "spin_lock.h"
#include "tandem/detail/op_record.h"

namespace tandem::detail {

class ReadyFifo {
 public:
  ReadyFifo() {
    stub_.next_ready.store(nullptr, std::memory_order_relaxed);
    head_ = &stub_;
    tail_.store(&stub_, std::memory_order_relaxed);
  }
  ReadyFifo(const ReadyFifo&) = delete;
  ReadyFifo& operator=(const ReadyFifo&) = delete;

  void push(OpRecord* op) noexcept {
    op->next_ready.store(nullptr, std::memory_order_relaxed);
    OpRecord* previous = tail_.exchange(op, std::memory_order_acq_rel);
    previous->next_ready.store(op, std::memory_order_release);
  }

  bool empty() const noexcept { return tail_.load(std::memory_order_acquire) == &stub_; }

  // The oldest op, or null when empty (or when a push is half done: poll again).
  OpRecord* pop() noexcept {
    if (empty()) return nullptr;
    std::lock_guard lock(consumer_lock_);
    OpRecord* head = head_;
    OpRecord* next = head->next_ready.load(std::memory_order_acquire);
    if (head == &stub_) {
      if (next == nullptr) return nullptr;
      head_ = head = next;
      next = next->next_ready.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      head_ = next;
      return head;
    }
    // `head` is the last linked record. Unless a producer is mid-push, put the stub behind it
    // so that `head` can leave the chain.
    if (tail_.load(std::memory_order_acquire) != head) return nullptr;
    push(&stub_);
    next = head->next_ready.load(std::memory_order_acquire);
    if (next == nullptr) return nullptr;
    head_ = next;
    return head;
  }

 private:
  SpinLock consumer_lock_;
  OpRecord* head_;
  alignas(64) std::atomic<OpRecord*> tail_;
  alignas(64) OpRecord stub_;
};

}  // namespace tandem::detail
