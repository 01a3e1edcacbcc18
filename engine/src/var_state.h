// VarState: the dependency queue of one var.
//
// Invariants (all fields but `poison` are guarded by `lock`):
// - The ops holding the var ("granted") are either one writer (`write_active`) or
//   `active_reads` readers, never both.
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
#include <cstddef>
#include <cstdint>

#include "base/assertions.h"
#include "base/spin_lock.h"
#include "device_work.h"
#include "error_record.h"
#include "tandem/detail/op_record.h"
#include "var_owner.h"

namespace tandem::detail {

// Aligned to a cache line, with what push and release touch in its first line: a var's state
// moves between the pushing thread and the workers on every op, and a state that straddled two
// lines, or shared one with the next var's (88-byte states from the heap, packed), moved two
// lines per access or collided with the op pushed on the neighbouring var.
struct alignas(64) VarState {
  SpinLock lock;
  std::atomic<std::uint32_t> generation{0};
  VarSlot* head = nullptr;
  VarSlot* tail = nullptr;
  std::atomic<VarOwner*> owner{nullptr};
  std::uint32_t active_reads = 0;
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

  // True when nothing holds the var and nothing waits for it.
  bool idle() const { return head == nullptr && !write_active && active_reads == 0; }
  // True when every earlier write has finished: a new read would be granted at once.
  bool readable() const { return head == nullptr && !write_active; }

  // Queues `slot` behind earlier ops; returns true when it is granted at once.
  bool enqueue(VarSlot* slot) {
    TANDEM_ASSERT(slot->var == this && slot->op != nullptr, "a slot queued on another var");
    if (head == nullptr && !write_active && (!slot->write || active_reads == 0)) {
      take(slot);
      return true;
    }
    slot->next = nullptr;
    if (tail != nullptr) {
      tail->next = slot;
    } else {
      head = slot;
    }
    tail = slot;
    return false;
  }

  // Ends one granted access and grants what can run now: the next write alone, or every read
  // up to the next write. Returns the newly granted slots linked through `next`.
  VarSlot* release(bool was_write) {
    TANDEM_ASSERT(was_write ? write_active : (!write_active && active_reads > 0),
                  "a var released an access it had not granted");
    if (was_write) {
      write_active = false;
    } else {
      --active_reads;
    }
    VarSlot* granted = nullptr;
    VarSlot** granted_tail = &granted;
    while (head != nullptr && !write_active) {
      VarSlot* slot = head;
      if (slot->write && active_reads > 0) break;
      head = slot->next;
      if (head == nullptr) tail = nullptr;
      take(slot);
      slot->next = nullptr;
      *granted_tail = slot;
      granted_tail = &slot->next;
    }
    return granted;
  }

 private:
  void take(VarSlot* slot) {
    TANDEM_ASSERT(!write_active && (!slot->write || active_reads == 0),
                  "a var granted an access that conflicts with one it had granted");
    if (fenced) slot->op->needs_fence_sync.store(true, std::memory_order_relaxed);
    if (slot->write) {
      write_active = true;
      writer = slot->op;
    } else {
      ++active_reads;
    }
  }
};

static_assert(offsetof(VarState, writer) + sizeof(OpRecord*) <= 64,
              "what push and release touch fits in a var state's first line");

VarState* acquire_var_state();
void release_var_state(VarState* var) noexcept;

}  // namespace tandem::detail
