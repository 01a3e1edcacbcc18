#include "cpu_executor.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "base/fast_tls.h"
#include "base/spin_lock.h"
#include "engine_core.h"
#include "profiler/profiler_recorder.h"
#include "wake_points.h"

namespace tandem::detail {

namespace {

int resolve_workers(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// oneTBB caps its workers at cores - 1 unless a global_control says otherwise, and applies the
// *smallest* value among live controls. An arena wants every slot for a worker (the pushing
// thread stays outside it), so the process keeps one control holding the largest value any
// engine asked for, replaced when a larger one is asked for and never lowered: an engine
// created beside (or after) another always gets its workers.
void allow_parallelism(int threads) {
  static std::mutex mutex;
  static tbb::global_control* control = nullptr;  // leaked on purpose: lives with the process
  static int allowed = 0;
  std::lock_guard lock(mutex);
  if (threads <= allowed) return;
  const int current = static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  if (control == nullptr && threads <= current) return;
  auto* raised = new tbb::global_control(tbb::global_control::max_allowed_parallelism,
                                         static_cast<std::size_t>(threads));
  delete control;  // the new, larger control is live first, so the cap never dips
  control = raised;
  allowed = threads;
}

bool is_copy(const OpRecord* op) {
  return op->props.queue != Queue::compute;
}

}  // namespace

// The drainer running on this thread, if any (an op body may start a nested one through TBB's
// work stealing; each restores the outer one when it returns).
struct CpuExecutor::DrainerContext {
  CpuExecutor* executor;
  OpRecord* next = nullptr;         // run_next_here's op, run before anything else but urgent ops
  std::uint64_t idle_polls = 0;     // published by publish_counters
  std::uint64_t ran_next_here = 0;  // the same
  std::uint64_t yields = 0;         // the same
};

constinit thread_local CpuExecutor::DrainerContext* CpuExecutor::tls_drainer TANDEM_FAST_TLS =
    nullptr;

// What a TBB task runs for a drainer: a pointer to the executor, carried from the enqueuing
// thread to a worker through oneTBB's task queue. The queue's synchronisation lives in libtbb,
// which is not instrumented, so ThreadSanitizer would see the worker's read of a plain captured
// `this` race with the enqueuer's write (or with an earlier task's use of the same recycled
// memory). The field is therefore only ever accessed atomically: stored with release when the
// functor is built or moved, loaded with acquire when it runs. It is left uninitialised on
// purpose before that first store, so no plain write to it exists at all.
// The same holds for the time of the enqueue, which the drainer compares with its start.
class CpuExecutor::DrainTask {
 public:
  DrainTask(CpuExecutor* executor, std::int64_t enqueued_ns) noexcept {
    slot().store(executor, kStore);
    enqueued().store(enqueued_ns, kStore);
  }
  DrainTask(DrainTask&& other) noexcept : DrainTask(static_cast<const DrainTask&>(other)) {}
  DrainTask(const DrainTask& other) noexcept {
    slot().store(other.slot().load(kLoad), kStore);
    enqueued().store(other.enqueued().load(kLoad), kStore);
  }
  DrainTask& operator=(const DrainTask&) = delete;
  DrainTask& operator=(DrainTask&&) = delete;
  ~DrainTask() = default;

  void operator()() const noexcept { slot().load(kLoad)->drain(enqueued().load(kLoad)); }

 private:
  static constexpr auto kStore = std::memory_order_release;
  static constexpr auto kLoad = std::memory_order_acquire;
  std::atomic_ref<CpuExecutor*> slot() const noexcept { return std::atomic_ref(executor_); }
  std::atomic_ref<std::int64_t> enqueued() const noexcept { return std::atomic_ref(enqueued_ns_); }

  mutable CpuExecutor* executor_;
  mutable std::int64_t enqueued_ns_;
};

#if defined(TANDEM_WAKE_POINTS)
struct WakeProbe {
  static inline std::atomic<CpuExecutor*> newest{nullptr};

  static std::string describe() {
    CpuExecutor* executor = newest.load();
    if (executor == nullptr) return "no executor";
    const auto count = [](const std::atomic<int>& n) { return std::to_string(n.load()); };
    ReadyFifo& fifo = executor->normal_;
    return "drainers: " + count(executor->active_drainers_) + " active, " +
           count(executor->live_drainers_) + " live, " + count(fifo.idle_consumers()) +
           " idle; lanes idle: " + count(executor->idle_lanes_) +
           "; queued: fifo=" + (fifo.may_hold_work() ? "yes" : "no") +
           " urgent=" + (executor->urgent_.empty() ? "no" : "yes") +
           " copies=" + (executor->copies_.empty() ? "no" : "yes") +
           " background=" + (executor->background_.empty() ? "no" : "yes");
  }
};

std::string describe_cpu_executor() {
  return WakeProbe::describe();
}
#endif

CpuExecutor::CpuExecutor(const EngineConfig& config, EngineCore& engine)
    : engine_(engine),
      num_workers_(resolve_workers(config.cpu_workers)),
      spin_(config.spin_before_park),
      max_idle_pauses_(max_idle_poll_pauses()),
      stream_gap_pauses_(stream_gap_pauses()),
      slot_counters_(std::make_unique<SlotCounters[]>(static_cast<std::size_t>(num_workers_))) {
  allow_parallelism(num_workers_ + 1);
  arena_.initialize(num_workers_, /*reserved_for_masters=*/0);
  for (int i = 0; i < config.priority_workers; ++i) {
    priority_threads_.emplace_back([this, i] { priority_lane(num_workers_ + i); });
  }
#if defined(TANDEM_WAKE_POINTS)
  WakeProbe::newest.store(this);
#endif
}

CpuExecutor::~CpuExecutor() {
#if defined(TANDEM_WAKE_POINTS)
  WakeProbe::newest.store(nullptr);
#endif
  stopping_.store(true);
  urgent_epoch_.fetch_add(1);
  urgent_epoch_.notify_all();  // every lane, parked or not, sees stopping_ and returns
  for (auto& thread : priority_threads_) thread.join();
  // Drainers exit once they find nothing to do; wait for the last one to return.
  while (live_drainers_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  arena_.terminate();
}

int CpuExecutor::running_workers() const {
  const auto cap = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  const auto workers_allowed = static_cast<int>(std::min<std::size_t>(cap - 1, 1 << 20));
  return std::max(0, std::min(num_workers_, workers_allowed));
}

void CpuExecutor::submit(OpRecord* op) noexcept {
  // Copies and prioritised ops out of line: the plain op's path then needs no saved registers.
  if (is_copy(op) || op->props.priority != 0) [[unlikely]] {
    return submit_to_priority_queue(op);
  }
  // No fence: the push's exchange on the FIFO's tail is itself seq_cst (see wake_drainer).
  normal_.push(op);
  TANDEM_WAKE_POINT(submit_published);
  // An idle drainer takes the op within a poll: waking another would only add a poller.
  if (idle_drainers().load(std::memory_order_seq_cst) != 0) return;
  wake_drainer();
}

void CpuExecutor::submit_to_priority_queue(OpRecord* op) noexcept {
  if (is_copy(op)) {
    copies_.push(op);
    TANDEM_WAKE_POINT(submit_published);
    wake_lane();
    // Pairs with the lane's count drop in priority_lane(): either this sees no idle lane and
    // wakes a drainer, or that lane sees this copy once it is busy and wakes one itself.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (drainers_take_copies()) wake_drainer();
    return;
  }
  if (op->props.priority > 0) {
    urgent_.push(op);
    TANDEM_WAKE_POINT(submit_published);
    wake_lane();
    std::atomic_thread_fence(std::memory_order_seq_cst);
  } else {
    background_.push(op);
    TANDEM_WAKE_POINT(submit_published);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  if (idle_drainers().load(std::memory_order_seq_cst) != 0) return;
  wake_drainer();
}

void CpuExecutor::wake_lane() noexcept {
  if (priority_threads_.empty()) return;
  urgent_epoch_.fetch_add(1, std::memory_order_seq_cst);
  TANDEM_WAKE_POINT(lane_epoch_bumped);
  urgent_epoch_.notify_one();
}

bool CpuExecutor::run_next_here(OpRecord* op) noexcept {
  DrainerContext* context = tls_drainer;
  if (context == nullptr || context->executor != this || context->next != nullptr) return false;
  if (op->props.priority != 0 || op->props.queue != Queue::compute || !normal_.empty()) {
    return false;
  }
  context->next = op;
  ++context->ran_next_here;
  return true;
}

void CpuExecutor::add_stats(EngineStats& stats) const {
  stats.worker_wakes += drainer_wakes_.load(std::memory_order_relaxed);
  stats.worker_parks += drainer_parks_.load(std::memory_order_relaxed);
  stats.worker_late_starts += late_starts_.load(std::memory_order_relaxed);
  for (int i = 0; i < num_workers_; ++i) {
    stats.worker_idle_polls += slot_counters_[i].idle_polls.load(std::memory_order_relaxed);
    stats.ops_run_next_here += slot_counters_[i].ran_next_here.load(std::memory_order_relaxed);
    stats.worker_yields += slot_counters_[i].yields.load(std::memory_order_relaxed);
  }
}

void CpuExecutor::publish_counters(DrainerContext& context, int worker) noexcept {
  if (worker < 0 || worker >= num_workers_) return;
  SlotCounters& slot = slot_counters_[worker];
  // One writer per slot at a time, so a load and a store (no locked update) suffice.
  slot.idle_polls.store(slot.idle_polls.load(std::memory_order_relaxed) + context.idle_polls,
                        std::memory_order_relaxed);
  slot.ran_next_here.store(
      slot.ran_next_here.load(std::memory_order_relaxed) + context.ran_next_here,
      std::memory_order_relaxed);
  slot.yields.store(slot.yields.load(std::memory_order_relaxed) + context.yields,
                    std::memory_order_relaxed);
  context.idle_polls = 0;
  context.ran_next_here = 0;
  context.yields = 0;
}

// next_op and pop_any are the drain loop's per-op pop, called from drain() alone: inlined, the
// loop keeps the queues' addresses in registers (77 -> 39 instructions per op, callgrind).
[[gnu::always_inline]] inline OpRecord* CpuExecutor::next_op(DrainerContext& context) noexcept {
  if (OpRecord* successor = context.next) {
    context.next = nullptr;
    // An urgent op still goes first, but the successor must not wait behind it on this thread
    // while another worker is idle: it goes back to the shared FIFO, and a drainer is woken.
    if (OpRecord* urgent = urgent_.pop()) [[unlikely]] {
      normal_.push(successor);
      TANDEM_WAKE_POINT(successor_requeued);
      wake_drainer();
      return urgent;
    }
    // Copies do not go first: they are the lanes' work, or this drainer's after this op.
    return successor;
  }
  return pop_any();
}

[[gnu::always_inline]] inline OpRecord* CpuExecutor::pop_any() noexcept {
  if (OpRecord* op = urgent_.pop()) return op;
  if (drainers_take_copies()) {
    if (OpRecord* op = copies_.pop()) return op;
  }
  if (OpRecord* op = normal_.pop()) return op;
  return background_.pop();
}

OpRecord* CpuExecutor::pop_lane_op() noexcept {
  if (OpRecord* op = urgent_.pop()) return op;
  return copies_.pop();
}

// Pairs with the re-check in drain(): the submitter publishes the op, then looks at the drainer
// count; a drainer drops its count, then looks for ops. Both sides order their two steps
// seq_cst, so at least one of them sees the other and an op is never left without a drainer:
// - an op of the FIFO is published by a seq_cst exchange on its tail, which the drainer
//   re-reads seq_cst (ReadyFifo::may_hold_work). That needs no fence on the submit path: a
//   full fence there cost ~50 ns per push (push_cost 184 -> 133 ns without it);
// - an op of the priority queues is published under their mutex, so submit() follows it with
//   a full fence, and the drainer has one before its re-check.
void CpuExecutor::wake_drainer() noexcept {
  int active = active_drainers_.load(std::memory_order_seq_cst);
  while (active < num_workers_) {
    if (active_drainers_.compare_exchange_weak(active, active + 1, std::memory_order_seq_cst)) {
      live_drainers_.fetch_add(1, std::memory_order_relaxed);
      drainer_wakes_.fetch_add(1, std::memory_order_relaxed);
      TANDEM_WAKE_POINT(drainer_counted);
      arena_.enqueue(DrainTask(this, profiling::now_ns()));
      return;
    }
  }
}

void CpuExecutor::drain(std::int64_t enqueued_ns) noexcept {
  // Counted active since its enqueue: until it starts, no push wakes another drainer.
  if (profiling::now_ns() - enqueued_ns > kLateStartNs) [[unlikely]]
    late_starts_.fetch_add(1, std::memory_order_relaxed);
  const int worker = tbb::this_task_arena::current_thread_index();
  DrainerContext context{this};
  DrainerContext* const outer = tls_drainer;
  tls_drainer = &context;
  bool resumed = false;
  // Idle streaks in a row that an op ended within kQuickRefillPolls polls (up to
  // kStreamRefills): this drainer keeps up with a stream (see stream_gap_pauses_).
  unsigned quick_refills = 0;
  for (;;) {
    using Clock = std::chrono::steady_clock;
    // The idle clock starts at the first empty poll, so a busy drainer never reads the clock;
    // an idle one reads it every 64 polls (a read costs ~20 ns).
    Clock::time_point idle_since;
    unsigned empty_polls = 0;
    unsigned paused = 0;    // pauses since the last clock check
    bool spinning = false;  // this drainer was the first idle one (see `idle_drainers`)
    if (resumed) {
      // Back from a park attempt that found work: still idle until it takes an op, so that
      // taking one ends an idle streak below and wakes a drainer for what it leaves behind
      // (pushes made while it counted as idle woke no one).
      idle_since = Clock::now();
      empty_polls = 1;
      spinning = idle_drainers().fetch_add(1, std::memory_order_seq_cst) == 0;
    }
    for (;;) {
      if (OpRecord* op = next_op(context)) {
        // The end of an idle streak: publish the counters (never on a busy drainer's path).
        if (empty_polls != 0) [[unlikely]] {
          quick_refills =
              empty_polls <= kQuickRefillPolls ? std::min(quick_refills + 1, kStreamRefills) : 0;
          publish_counters(context, worker);
          empty_polls = 0;
          TANDEM_WAKE_POINT(drainer_took_op);
          // Pushes made while this drainer was idle woke no one: if it leaves ops behind and
          // no other drainer is idle, one is woken for them (two long ops pushed together
          // must not run one after the other). In a stream of small ops this costs one look
          // at the FIFO per batch, and a wake-up at most while the other drainer is parked.
          const bool was_last_idle = idle_drainers().fetch_sub(1, std::memory_order_seq_cst) == 1;
          TANDEM_WAKE_POINT(drainer_busy_again);
          if (was_last_idle && normal_.may_hold_work()) wake_drainer();
        }
        engine_.execute(op, worker);
        continue;
      }
      if (empty_polls++ == 0) {
        idle_since = Clock::now();
        // The first idle drainer spins; any other yields, briefly (see `idle_drainers`).
        spinning = idle_drainers().fetch_add(1, std::memory_order_seq_cst) == 0;
        TANDEM_WAKE_POINT(drainer_idle);
      }
      ++context.idle_polls;
      if (!spinning) {
        // Another drainer is idle and takes the next op: this one gives its core to any other
        // runnable thread (the pusher, on 2 cores) for a few polls, then parks. A push wakes
        // it again only once no drainer is idle.
        ++context.yields;
        std::this_thread::yield();
        if (empty_polls >= kExtraDrainerPolls) break;
        continue;
      }
      // Back off: a poll reads the FIFO's tail line, which the pusher writes on every push.
      // Polled at the pusher's rate, the line moves between the two cores on every op and
      // both slow down; the drainer then keeps pace op by op, finds the FIFO empty each time
      // and keeps polling (the slow mode of docs/benchmarks.md). Polled less and less often
      // over an idle streak, it finds a batch behind the line instead.
      // In a stream, the streak's first wait is the gap that lets a batch form.
      const unsigned pauses =
          empty_polls == 1 && quick_refills == kStreamRefills
              ? std::max(stream_gap_pauses_, 1u)
              : std::min(1u << std::min(empty_polls - 1, 16u), max_idle_pauses_);
      for (unsigned i = 0; i < pauses; ++i) cpu_relax();
      paused += pauses;
      if (paused >= kPausesPerClockCheck) {
        paused = 0;
        if (Clock::now() - idle_since >= spin_) break;
        // The pushing thread may need this core (workers = cores by default): give it up.
        std::this_thread::yield();
      }
    }
    // Idle first, then inactive: a push that saw this drainer idle and woke no one is seen
    // by the re-check below (see wake_drainer).
    TANDEM_WAKE_POINT(drainer_stops_polling);
    idle_drainers().fetch_sub(1, std::memory_order_seq_cst);
    TANDEM_WAKE_POINT(drainer_between_counts);
    active_drainers_.fetch_sub(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    TANDEM_WAKE_POINT(drainer_before_recheck);
    bool work_left = !urgent_.empty() || normal_.may_hold_work() || !background_.empty() ||
                     (!copies_.empty() && drainers_take_copies());
    int active = active_drainers_.load(std::memory_order_relaxed);
    resumed = false;
    while (work_left && active < num_workers_) {
      if (active_drainers_.compare_exchange_weak(active, active + 1, std::memory_order_seq_cst)) {
        resumed = true;
        break;
      }
    }
    if (!resumed) break;
  }
  TANDEM_WAKE_POINT(drainer_parks);
  // `context.next` is empty here: it is always taken before the loop polls the queues.
  tls_drainer = outer;
  drainer_parks_.fetch_add(1, std::memory_order_relaxed);
  publish_counters(context, worker);
  // Last access to `this`: the destructor may run as soon as this count reaches zero.
  live_drainers_.fetch_sub(1, std::memory_order_release);
}

void CpuExecutor::priority_lane(int index) noexcept {
  idle_lanes_.fetch_add(1, std::memory_order_seq_cst);
  while (!stopping_.load(std::memory_order_acquire)) {
    std::uint32_t epoch = urgent_epoch_.load(std::memory_order_seq_cst);
    if (OpRecord* op = pop_lane_op()) {
      // Busy from here: drainers may take copies. A copy queued while this lane still counted
      // as idle woke no drainer (see submit), so if one is left, this lane wakes a drainer and
      // the other lanes for it.
      idle_lanes_.fetch_sub(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      TANDEM_WAKE_POINT(lane_busy);
      if (!copies_.empty() || !urgent_.empty()) {
        wake_lane();
        wake_drainer();
      }
      engine_.execute(op, index);
      idle_lanes_.fetch_add(1, std::memory_order_seq_cst);
      continue;
    }
    TANDEM_WAKE_POINT(lane_before_park);
    // Spin briefly, then park until the next urgent op or copy (or shutdown) bumps the epoch.
    auto deadline = std::chrono::steady_clock::now() + spin_;
    bool found = false;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!urgent_.empty() || !copies_.empty()) {
        found = true;
        break;
      }
      cpu_relax();
    }
    if (!found) urgent_epoch_.wait(epoch, std::memory_order_seq_cst);
  }
  idle_lanes_.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace tandem::detail
