// The engine's record of one pushed op. Public only because `Engine::push` is a template that
// builds the op's callable in place; nothing outside the engine should touch these fields.
//
// Records come from a pool (see op_pool.cc) so that pushing an op allocates nothing in the
// steady state: the callable lives inline when it fits, and so do the op's var slots.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "tandem/device.h"
#include "tandem/op_props.h"
#include "tandem/run_context.h"

namespace tandem {
class DeviceEvent;
}

namespace tandem::detail {

struct OpRecord;
struct VarState;

// Receives the end of every op: the engine that ran it.
class CompletionSink {
 public:
  // Both the body and the Completion of an async op have ended: settle it.
  virtual void complete(OpRecord* op) noexcept = 0;
  // An async op's Completion was handed out, and later invoked (or dropped): between the two,
  // the op waits for the world outside the engine.
  virtual void on_completion_taken(const OpRecord* /*op*/) noexcept {}
  virtual void on_completion_given(const OpRecord* /*op*/) noexcept {}

 protected:
  ~CompletionSink() = default;
};

// One edge between an op and a var. It lives inside the op record; a var's queue of waiting ops
// is a linked list threaded through these slots, so queueing allocates nothing.
struct VarSlot {
  VarState* var = nullptr;
  VarSlot* next = nullptr;
  OpRecord* op = nullptr;
  bool write = false;
  // The op reads the var's current value: a plain read, or a var listed as read and write.
  // Only these slots make an op skip when the var is poisoned.
  bool reads_value = false;
  // The op's own outcome does not set the var's poison when it finishes: a replayed graph
  // segment (graph_replay.cc) holds the var while its ops set the poison one by one.
  bool keeps_poison = false;
};

// Layout: an op's record moves between cores (written by the pusher, read and written by a
// worker, reused by the pusher), and every cache line it touches costs a coherence miss each
// way. So what every op touches is packed into the first two lines, the callable and the var
// slots follow, and fields only some ops use (async completion, errors, priority queue,
// profiling) come last and are written only when used. A one-var op's slot and the first 32
// bytes of the callable share line 3, so that the commonest op, one var and a small callable,
// touches three lines rather than four (bench_engine --quick, alternated: 17-33% less time per
// op on `independent` and `push_cost`; docs/benchmarks.md, "Sixth pass"). The offsets
// (x86-64, checked by the static_asserts after the struct):
//   bytes   0- 63  line 1: the callable's pointers, `slots`, `props` (24) and `device` (8)
//   bytes  64-127  line 2: `num_slots`, the flags (`is_waiter` ... `needs_fence_sync`, 68-71),
//                  `pending_vars`, `worker`, `sink`, `push_sequence`, `profile_id`,
//                  `var_to_delete` and the two links
//   bytes 128-159  line 3: the slot of an op with one var (`first_slot`)
//   bytes 160-255  the inline callable (96): a callable of up to 32 bytes stays on line 3
//   bytes 256-447  the inline var slots of ops with more vars (6 x 32)
//   bytes 448-639  used by some ops only
struct alignas(64) OpRecord {
  static constexpr std::size_t kInlineCallableBytes = 96;
  static constexpr std::size_t kInlineSlots = 6;

  // --- line 1 (0-63): what push writes and the worker reads ---------------------------------
  void (*invoke)(void* callable, RunContext& ctx) = nullptr;
  void (*destroy)(void* callable, bool on_heap) noexcept = nullptr;
  void* callable = nullptr;
  VarSlot* slots = inline_slots;
  OpProps props{};
  Device device{};

  // --- line 2 (64-127): the rest of what every op touches ----------------------------------
  std::uint32_t num_slots = 0;
  // Engine-internal ops that only signal a waiting thread: they run in the thread that grants
  // them, never change poison, and are not counted as user ops.
  bool is_waiter = false;
  // Completion has been handed to the op (async ops) and must not be taken twice.
  bool completion_taken = false;
  // The wait_all epoch the op was pushed in, modulo 2 (threaded engine; see wait_all).
  std::uint8_t epoch_parity = 0;
  // A var was granted to the op while it carried device fences: a CPU op settles them before
  // it runs. Set under the var's lock by whichever thread grants (hence atomic); the grant's
  // hand-off through `pending_vars` makes it visible to the thread that runs the op.
  std::atomic<bool> needs_fence_sync{false};

  // Scheduling state. Vars not yet granted to this op, plus one held by push until it has queued on
  // every var. The op is ready when this reaches zero.
  std::atomic<std::uint32_t> pending_vars{0};
  int worker = -1;  // lane that ran it
  CompletionSink* sink = nullptr;
  // Push order within its engine (from 0); an error remembers the push order of its op.
  std::uint64_t push_sequence = 0;
  // Profiler: 0 = not profiled.
  std::uint64_t profile_id = 0;
  // Set when the var this op writes is to be freed once the op completes (delete_var).
  VarState* var_to_delete = nullptr;
  // Ready-queue link (ReadyFifo) and free-list link (pool).
  std::atomic<OpRecord*> next_ready{nullptr};
  OpRecord* next = nullptr;

  // --- line 3 (128-191): a one-var op's slot, then the callable's first 32 bytes -------------
  VarSlot first_slot{};
  // --- the callable (160-255) and the var slots of ops with more vars (256-447) --------------
  alignas(std::max_align_t) unsigned char callable_storage[kInlineCallableBytes];
  VarSlot inline_slots[kInlineSlots];

  // --- used by some ops only -----------------------------------------------------------------
  // Async ops: the body's return and the Completion each drop one reference; the last one
  // finishes the op. Each side writes only its own error field before dropping its reference.
  std::atomic<int> completion_refs{0};
  std::exception_ptr body_error;
  std::exception_ptr completion_error;
  // Ready order, for FIFO among equal priorities (priority queues only).
  std::uint64_t ready_sequence = 0;
  // Per-engine scratch (the naive engine keeps the pusher's completion signal here).
  void* engine_token = nullptr;
  // Accelerator ops: the stream the op was launched on (RunContext::stream), and, when
  // profiled, the timing events recorded before and after its body.
  Stream* stream = nullptr;
  std::shared_ptr<DeviceEvent> start_event, end_event;
  // Profiling times and dependency edges.
  std::int64_t push_ns = 0, ready_ns = 0, start_ns = 0;
  std::atomic<std::uint8_t> num_depends_on{0};
  std::uint64_t depends_on[4] = {};

  template <class Fn>
  void set_callable(Fn&& fn);
  void run(RunContext& ctx) { invoke(callable, ctx); }
  // Destroys the callable (and its captures) right after it ran, not when the record is reused.
  void destroy_callable() noexcept {
    if (destroy != nullptr) destroy(callable, callable != callable_storage);
    destroy = nullptr;
    invoke = nullptr;
    callable = nullptr;
  }
};

// The layout the comment above describes, which the hot path's cache-line budget depends on.
static_assert(std::is_standard_layout_v<OpRecord>, "offsetof below needs a standard layout");
static_assert(sizeof(VarSlot) == 32, "six inline var slots are three cache lines");
static_assert(offsetof(OpRecord, device) + sizeof(Device) <= 64,
              "push's fields (callable, slots, props, device) fit in line 1");
static_assert(offsetof(OpRecord, num_slots) == 64 &&
                  offsetof(OpRecord, needs_fence_sync) + sizeof(std::atomic<bool>) <= 72,
              "num_slots and the flags open line 2");
static_assert(offsetof(OpRecord, next) + sizeof(OpRecord*) <= 128,
              "the scheduling state ends within line 2");
static_assert(offsetof(OpRecord, first_slot) == 128, "a one-var op's slot opens line 3");
static_assert(offsetof(OpRecord, callable_storage) == 160,
              "the inline callable follows it on line 3");
static_assert(offsetof(OpRecord, inline_slots) == 160 + OpRecord::kInlineCallableBytes,
              "the inline slots follow the callable");
static_assert(offsetof(OpRecord, completion_refs) ==
                  offsetof(OpRecord, inline_slots) + OpRecord::kInlineSlots * sizeof(VarSlot),
              "the fields some ops use come last");
static_assert(sizeof(OpRecord) % 64 == 0, "records are whole cache lines");

// The pool of op records (thread-local caches over a shared free list).
OpRecord* acquire_op_record();
void release_op_record(OpRecord* op) noexcept;

template <class Fn>
void OpRecord::set_callable(Fn&& fn) {
  using Callable = std::decay_t<Fn>;
  static_assert(std::is_invocable_v<Callable&, RunContext&> || std::is_invocable_v<Callable&>,
                "an op's function must be callable as fn(RunContext&) or fn()");
  constexpr bool fits = sizeof(Callable) <= kInlineCallableBytes &&
                        alignof(Callable) <= alignof(std::max_align_t) &&
                        std::is_nothrow_move_constructible_v<Callable>;
  if constexpr (fits) {
    callable = new (callable_storage) Callable(std::forward<Fn>(fn));
  } else {
    callable = new Callable(std::forward<Fn>(fn));
  }
  invoke = [](void* self, RunContext& ctx) {
    auto& f = *static_cast<Callable*>(self);
    if constexpr (std::is_invocable_v<Callable&, RunContext&>) {
      f(ctx);
    } else {
      f();
    }
  };
  destroy = [](void* self, bool on_heap) noexcept {
    if (on_heap) {
      delete static_cast<Callable*>(self);
    } else {
      static_cast<Callable*>(self)->~Callable();
    }
  };
}

}  // namespace tandem::detail
