// VarState: the dependency queue of one var.
//
// Invariants (all fields but `poison` and `read_state` are guarded by `lock`):
// - The ops holding the var ("granted") are either one writer (`write_active`) or
//   `active_reads()` readers, never both.
// - `read_state` is the count of granted reads plus `kSlotsWaiting` exactly when `head` is not
//   null. It changes under `lock`, except that a finishing read decrements it without the lock
//   (end_read): a read's end can grant something only when it is the last read and a slot
//   waits, and the one atomic decrement tells the reader both. A reader that leaves no slot
//   waiting never touches the var again (it may be deleted and reused at once); one that does
//   takes the lock and grants (grant_after_last_read), and until it has, the waiting head's op
//   cannot run, so the var cannot go away under it. Pushes change `read_state` by
//   compare-exchange, so a decrement to zero and a push that queues behind the reads are
//   ordered: either the push sees zero and is granted at once, or the reader sees the flag.
// - `head..tail` are the slots still waiting, in the order their pushes took the var. A slot is
//   granted only from the head, so results follow push order: a write waits for every earlier
//   read and write; a read waits for the earlier write.
// - `poison` is written only by the op holding the var for writing (when it finishes) and read
//   only by ops holding it; the grant hand-off under `lock` orders those accesses.
// - `generation` and `owner` validate handles (var.h, var_owner.h): new_var sets `owner` and
//   hands out the current generation; delete_var moves the generation on (a compare-exchange,
//   so of two deletes of one var exactly one succeeds). Neither is reset when the state goes
//   back to the pool, and pooled states are never freed: reading them through a stale handle
//   is always safe. Both are atomic because a stale handle may be checked on one thread while
//   another reuses the state (relaxed: the check needs no ordering, only a value it can trust
//   not to be torn).
// - `fenced` is true exactly when `fences` holds device work (see device_work.h). Every op
//   granted while it is set is marked `needs_fence_sync`, so a CPU op settles fences only when
//   a var it holds has some: the pure-CPU path pays one byte test at grant.
#pragma once

#include <atomic>
#include <cstdint>

#include "assertions.h"
#include "device_work.h"
#include "error_record.h"
#include "spin_lock.h"
#include "tandem/detail/op_record.h"
#include "var_owner.h"

namespace tandem::detail {

struct VarState {
  SpinLock lock;
  std::atomic<std::uint32_t> generation{0};
  VarSlot* head = nullptr;
  VarSlot* tail = nullptr;
  std::atomic<VarOwner*> owner{nullptr};
  std::atomic<std::uint32_t> read_state{0};
  bool write_active = false;
  bool fenced = false;
  ErrorRef poison;
  // The op holding the var for writing, while `write_active` (for wait reports only; one
  // store at grant, in a line the grant writes anyway).
  OpRecord* writer = nullptr;
  // Profiler only: the last profiled op pushed that writes this var (its dependency source).
  std::uint64_t last_writer_profile_id = 0;
  VarState* next_free = nullptr;  // pool link while unused
  // Device work still possibly running on the var (allocated at its first fence, kept for reuse).
  VarFences* fences = nullptr;

  // Under `lock`.
  void clear_fences() {
    if (fences != nullptr) fences->clear();
    fenced = false;
  }
  VarFences& fences_for_update() {
    if (fences == nullptr) fences = new VarFences();
    fenced = true;
    return *fences;
  }

  static constexpr std::uint32_t kSlotsWaiting = 0x8000'0000u;

  std::uint32_t active_reads() const {
    return read_state.load(std::memory_order_acquire) & ~kSlotsWaiting;
  }
  // True when nothing holds the var and nothing waits for it.
  bool idle() const { return head == nullptr && !write_active && active_reads() == 0; }
  // True when every earlier write has finished: a new read would be granted at once.
  bool readable() const { return head == nullptr && !write_active; }

  // Queues `slot` behind earlier ops; returns true when it is granted at once.
  bool enqueue(VarSlot* slot) {
    TANDEM_ASSERT(slot->var == this && slot->op != nullptr, "a slot queued on another var");
    slot->next = nullptr;
    if (tail != nullptr) {  // slots wait already, and the flag is set: queue behind them
      tail->next = slot;
      tail = slot;
      return false;
    }
    if (!write_active) {
      if (!slot->write) {
        take(slot);
        return true;
      }
      // A write is granted when no read holds the var; else it waits, and the flag tells the
      // last read to grant it. Reads may end meanwhile (end_read): retry until one of the two
      // states is seen and kept.
      std::uint32_t state = read_state.load(std::memory_order_acquire);
      for (;;) {
        if (state == 0) {
          take(slot);
          return true;
        }
        if (read_state.compare_exchange_weak(state, state | kSlotsWaiting,
                                             std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
          break;
        }
      }
    } else {
      // A write holds the var, so no read can end meanwhile: a plain store sets the flag (an
      // atomic read-modify-write here cost every op of a chain one more locked instruction).
      TANDEM_ASSERT(active_reads() == 0, "a var granted a write while reads held it");
      read_state.store(kSlotsWaiting, std::memory_order_relaxed);
    }
    head = tail = slot;
    return false;
  }

  // Ends one granted read without the lock. True when it was the last read and slots wait: the
  // caller then takes the lock and calls grant_after_last_read. False: nothing to grant, and
  // the caller must not touch the var any more.
  bool end_read() {
    const std::uint32_t before = read_state.fetch_sub(1, std::memory_order_acq_rel);
    TANDEM_ASSERT((before & ~kSlotsWaiting) > 0, "a var released a read it had not granted");
    return before == (kSlotsWaiting | 1);
  }
  // Under `lock`, after end_read returned true: grants the waiting write at the head.
  VarSlot* grant_after_last_read() { return grant_waiting(); }

  // Ends the granted write and grants what can run now: the next write alone, or every read
  // up to the next write. Returns the newly granted slots linked through `next`.
  VarSlot* end_write() {
    TANDEM_ASSERT(write_active, "a var released a write it had not granted");
    write_active = false;
    return grant_waiting();
  }

 private:
  // Grants from the head what can run now (under `lock`, with no write active): the next
  // write alone, or every read up to the next write; clears the flag once nothing waits.
  // Called when no read holds the var (a write ended, or the last read did), and the reads it
  // grants have not started: no end_read can run meanwhile, so the flag is cleared by a plain
  // store.
  VarSlot* grant_waiting() {
    TANDEM_ASSERT(active_reads() == 0, "a var granted waiting ops while reads held it");
    VarSlot* granted = nullptr;
    VarSlot** granted_tail = &granted;
    while (head != nullptr && !write_active) {
      VarSlot* slot = head;
      if (slot->write && active_reads() > 0) break;
      head = slot->next;
      if (head == nullptr) {
        tail = nullptr;
        read_state.store(read_state.load(std::memory_order_relaxed) & ~kSlotsWaiting,
                         std::memory_order_relaxed);
      }
      take(slot);
      slot->next = nullptr;
      *granted_tail = slot;
      granted_tail = &slot->next;
    }
    return granted;
  }

  void take(VarSlot* slot) {
    TANDEM_ASSERT(!write_active && (!slot->write || active_reads() == 0),
                  "a var granted an access that conflicts with one it had granted");
    if (fenced) slot->op->needs_fence_sync.store(true, std::memory_order_relaxed);
    if (slot->write) {
      write_active = true;
      writer = slot->op;
    } else {
      read_state.fetch_add(1, std::memory_order_relaxed);
    }
  }
};

VarState* acquire_var_state();
void release_var_state(VarState* var) noexcept;

}  // namespace tandem::detail
