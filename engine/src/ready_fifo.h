// ReadyFifo: the FIFO of ready priority-0 compute ops, the busiest queue of the engine.
//
// Producers (any thread that makes an op ready) link ops in with one atomic exchange on `tail_`
// and never wait. Consumers (drainers) take ops under a spin lock, one at a time. The queue is
// intrusive (linked through OpRecord::next_ready), so it allocates nothing; a stub record marks
// the empty queue. This is the well-known intrusive MPSC queue of D. Vyukov, made multi-consumer
// by the consumer lock.
//
// Invariants: `head_` (written by consumers under `consumer_lock_`) is the oldest unconsumed
// record, or the stub once everything before it was consumed; the stub may sit anywhere in the
// chain (a producer can link behind it while a consumer re-inserts it). So the queue is empty
// exactly when `head_` is the stub and nothing is linked behind it. Between a producer's
// exchange and its link store the chain is briefly broken: pop returns null and `empty()` may
// say true; the producer has already made its exchange, which is what a drainer about to go
// idle checks (may_hold_work, CpuExecutor::wake_drainer), so the op is never stranded.
#pragma once

#include <atomic>
#include <mutex>

#include "base/spin_lock.h"
#include "tandem/detail/op_record.h"
#include "wake_points.h"

namespace tandem::detail {

class ReadyFifo {
 public:
  ReadyFifo() {
    stub_.next_ready.store(nullptr, std::memory_order_relaxed);
    head_.store(&stub_, std::memory_order_relaxed);
    tail_.store(&stub_, std::memory_order_relaxed);
  }
  ReadyFifo(const ReadyFifo&) = delete;
  ReadyFifo& operator=(const ReadyFifo&) = delete;

  void push(OpRecord* op) noexcept {
    op->next_ready.store(nullptr, std::memory_order_relaxed);
    // seq_cst: the exchange is what a drainer going idle re-reads (may_hold_work).
    OpRecord* previous = tail_.exchange(op, std::memory_order_seq_cst);
    TANDEM_WAKE_POINT(fifo_linking);  // a test build's pause (wake_points.h)
    previous->next_ready.store(op, std::memory_order_release);
  }

  bool empty() const noexcept {
    return head_.load(std::memory_order_acquire) == &stub_ &&
           stub_.next_ready.load(std::memory_order_acquire) == nullptr;
  }

  // For a drainer about to go idle, after it has dropped its count (seq_cst): false only if
  // every op pushed before that point has been taken by a consumer. A push that this
  // seq_cst load does not see will see the dropped count instead (CpuExecutor::wake_drainer).
  // The tail is the stub exactly when the chain ends at the stub; a consumer that put it
  // there behind a concurrent push (see pop) is still running and takes that op itself, as
  // its own later head_ store is visible to it.
  bool may_hold_work() const noexcept {
    return tail_.load(std::memory_order_seq_cst) != &stub_ ||
           head_.load(std::memory_order_acquire) != &stub_;
  }

  // A count the consumers keep beside `tail_` (CpuExecutor's idle drainers): a push reads it
  // right after its exchange on `tail_`, so when a consumer has just written that line the
  // push pays one cache miss for both, not two.
  std::atomic<int>& idle_consumers() noexcept { return idle_consumers_; }

  // The oldest op, or null when empty (or when a push is half done: poll again).
  OpRecord* pop() noexcept {
    if (empty()) return nullptr;
    std::lock_guard lock(consumer_lock_);
    OpRecord* head = head_.load(std::memory_order_relaxed);
    OpRecord* next = head->next_ready.load(std::memory_order_acquire);
    if (head == &stub_) {
      if (next == nullptr) return nullptr;
      head = next;
      head_.store(head, std::memory_order_release);
      next = next->next_ready.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      head_.store(next, std::memory_order_release);
      return head;
    }
    // `head` is the last linked record. Unless a producer is mid-push, put the stub behind it
    // so that `head` can leave the chain.
    if (tail_.load(std::memory_order_acquire) != head) return nullptr;
    push(&stub_);
    next = head->next_ready.load(std::memory_order_acquire);
    if (next == nullptr) return nullptr;
    head_.store(next, std::memory_order_release);
    return head;
  }

 private:
  SpinLock consumer_lock_;
  std::atomic<OpRecord*> head_;
  alignas(64) std::atomic<OpRecord*> tail_;
  std::atomic<int> idle_consumers_{0};  // in tail_'s line on purpose (see idle_consumers)
  alignas(64) OpRecord stub_;
};

}  // namespace tandem::detail
