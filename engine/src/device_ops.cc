// EngineCore's accelerator side: launching an op on a stream, the fences it leaves on its vars,
// settling fences before CPU ops, and turning device failures into the engine's error records.
// docs/design.md ("Accelerators") explains the design: completion at launch plus per-var fences.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <memory_resource>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "engine_core.h"
#include "profiler/profiler_recorder.h"
#include "tandem/errors.h"

namespace tandem::detail {

namespace {

bool older(const ErrorRef& a, const ErrorRef& b) {
  return a && (!b || pushed_before(*a, *b));
}

// Scratch for the fence lists of one launch or one settle, on the caller's stack: a typical
// op's (a few vars, a fence or two each) fit, so they cost no heap allocation; more spill to
// the heap (issue 22, item 2: a dependent tiny op made 7 allocations in launch, 5 of them for
// these lists).
class FenceScratch {
 public:
  FenceScratch() : arena_(bytes_.data(), bytes_.size()) {}
  // An empty list on the scratch with room for `capacity` entries (declare it after the
  // scratch, so that it goes first).
  template <class T>
  std::pmr::vector<T> list(std::size_t capacity) {
    std::pmr::vector<T> entries(&arena_);
    entries.reserve(capacity);
    return entries;
  }

 private:
  alignas(std::max_align_t) std::array<std::byte, 1024> bytes_;
  std::pmr::monotonic_buffer_resource arena_;
};

}  // namespace

void EngineCore::wait_for(const DeviceWork& work) noexcept {
  if (work.done->query()) return;
  try {
    work.done->synchronize();
  } catch (...) {
    // The error is read from the event by whoever needs it.
  }
}

namespace {

// The fences settle_fences waits for: of each var, the write fence, plus the read fences for a
// write. Calls `visit` on each, outside the var's lock; stops early when `visit` returns false.
template <class Visit>
bool for_each_fence(OpRecord* op, Visit visit) {
  FenceScratch scratch;
  std::pmr::vector<DeviceWorkRef> works = scratch.list<DeviceWorkRef>(8);
  for (std::uint32_t i = 0; i < op->num_slots; ++i) {
    const VarSlot& slot = op->slots[i];
    VarState* var = slot.var;
    works.clear();
    var->lock.lock();
    if (var->fenced) {
      try {
        var->fences->collect(slot.write, works);
      } catch (...) {
        var->lock.unlock();
        throw;
      }
    }
    var->lock.unlock();
    for (const DeviceWorkRef& work : works) {
      if (!visit(*work)) return false;
    }
  }
  return true;
}

}  // namespace

bool EngineCore::fences_ended(OpRecord* op) noexcept {
  try {
    return for_each_fence(op, [](DeviceWork& work) { return work.done->query(); });
  } catch (...) {
    return false;
  }
}

void EngineCore::wait_for_fences(OpRecord* op) noexcept {
  try {
    for_each_fence(op, [](DeviceWork& work) {
      wait_for(work);
      return true;
    });
  } catch (...) {
    // settle_fences waits for what is left, on the worker.
  }
}

ErrorRef EngineCore::device_error(DeviceWork& work) {
  if (!work.done->error()) return nullptr;  // the common case: no lock
  std::lock_guard lock(device_errors_mutex_);
  return resolve_locked(work);
}

ErrorRef EngineCore::resolve_locked(DeviceWork& root) {
  // Depth first over the failed inputs not resolved yet, without recursion: a chain of skipped
  // work can be as long as the work in flight. Only failed work is ever pushed (`root` too: see
  // device_error). Every work on the stack has ended (the caller waited for `root`, and a
  // stream reaches its own work only after the work it waits on), so each error is final.
  std::vector<DeviceWork*> stack{&root};
  while (!stack.empty()) {
    DeviceWork* work = stack.back();
    if (work->resolved) {
      stack.pop_back();
      continue;
    }
    const std::exception_ptr error = work->done->error();
    bool inputs_pending = false;
    for (const DeviceWorkRef& input : work->inputs) {
      // Work that succeeded is never written here: its executor's prune() owns its `inputs`.
      if (!input->resolved && input->done->error()) {
        stack.push_back(input.get());
        inputs_pending = true;
      }
    }
    if (inputs_pending) continue;
    ErrorRef upstream;
    for (const DeviceWorkRef& input : work->inputs) {
      if (older(input->record, upstream)) upstream = input->record;
    }
    if (upstream) {
      // Skipped on the device: the oldest failure it read carries on, as for a skipped CPU op.
      ops_skipped_.fetch_add(1, std::memory_order_relaxed);
      work->record = std::move(upstream);
    } else {
      ops_failed_.fetch_add(1, std::memory_order_relaxed);
      work->record = std::make_shared<ErrorRecord>(
          wrap_op_error(work->op_name, work->device,
                        work->launch_error ? work->launch_error : error),
          work->push_sequence);
      log().debug("device work of op '{}' on {} failed", work->op_name, to_string(work->device));
      errors_.record(work->record);
    }
    work->resolved = true;
    work->inputs.clear();
    stack.pop_back();
  }
  return root.record;
}

ErrorRef EngineCore::settle_fences(OpRecord* op) noexcept {
  ErrorRef oldest;
  FenceScratch scratch;
  try {
    std::pmr::vector<DeviceWorkRef> works = scratch.list<DeviceWorkRef>(8);
    for (std::uint32_t i = 0; i < op->num_slots; ++i) {
      const VarSlot& slot = op->slots[i];
      VarState* var = slot.var;
      works.clear();
      bool counts = false;
      var->lock.lock();
      if (var->fenced) {
        var->fences->collect(slot.write, works);
        // The write fence's failure is the var's value failing, unless a later op already
        // poisoned the var (its poison is newer than every fence it left).
        // A replayed graph segment's unit (keeps_poison) takes it for the nodes it runs.
        counts = (slot.reads_value || slot.keeps_poison) && !var->poison &&
                 var->fences->write != nullptr;
        // A CPU write ends the var's device history: once waited for, nothing runs on it.
        if (slot.write) var->clear_fences();
      }
      var->lock.unlock();
      for (const DeviceWorkRef& work : works) wait_for(*work);
      if (counts) {
        // collect() put the write fence first.
        if (ErrorRef error = device_error(*works.front())) {
          // The unit holds a var it writes alone: the failure becomes its poison, which the
          // segment's nodes read (a var it only reads keeps its fence: graph_replay.cc).
          if (slot.keeps_poison && slot.write) var->poison = error;
          if (!oldest || pushed_before(*error, *oldest)) oldest = error;
        }
      }
    }
  } catch (...) {
    log().error("op '{}': could not settle device fences (out of memory?)", op->props.name);
  }
  return oldest;
}

void EngineCore::launch(OpRecord* op, Stream& stream, bool synchronize,
                        DeviceWorkTracker* tracker) noexcept {
  op->stream = &stream;
  op->worker = stream.index();
  const DeviceKind kind = stream.device().kind;
  std::exception_ptr error;
  FenceScratch scratch;
  // Device-side waits: (work, whether the op reads what it produced).
  std::pmr::vector<std::pair<DeviceWorkRef, bool>> device_waits =
      scratch.list<std::pair<DeviceWorkRef, bool>>(8);
  // Of those, the ones whose failure the op's stream inherits (DeviceWork::inputs).
  std::pmr::vector<DeviceWorkRef> inputs = scratch.list<DeviceWorkRef>(4);
  ErrorRef fence_error;
  std::exception_ptr deferred_launch_error;  // see DeviceWork::launch_error
  // A read input whose failure is known now: resolved on the host, and the op is skipped.
  const auto note_failure = [&](DeviceWork& work) {
    if (ErrorRef e = device_error(work); older(e, fence_error)) fence_error = std::move(e);
  };
  try {
    if (op->needs_fence_sync.load(std::memory_order_relaxed)) {
      std::pmr::vector<DeviceWorkRef> works = scratch.list<DeviceWorkRef>(8);
      for (std::uint32_t i = 0; i < op->num_slots; ++i) {
        const VarSlot& slot = op->slots[i];
        VarState* var = slot.var;
        works.clear();
        var->lock.lock();
        const bool counts =
            var->fenced && slot.reads_value && !var->poison && var->fences->write != nullptr;
        if (var->fenced) var->fences->collect(slot.write, works);
        var->lock.unlock();
        for (std::size_t w = 0; w < works.size(); ++w) {
          DeviceWork& work = *works[w];
          // Only the write fence of a var the op reads passes its failure on (collect() puts
          // it first); the others (write after write, write after read) only order.
          const bool reads_result = counts && w == 0;
          // Same backend: the stream waits on the device. A no-skip op must run even after a
          // failure upstream, which a device-side wait would skip, so it waits on the host, as
          // does an op whose fence is another backend's event.
          if (work.device.kind == kind && !op->props.no_skip) {
            // Already failed: skip at launch, like an op whose input is poisoned (a query only,
            // so the launcher never blocks on running work here).
            if (reads_result && work.done->query() && work.done->error()) {
              note_failure(work);
              continue;
            }
            device_waits.emplace_back(works[w], reads_result);
            if (reads_result) inputs.push_back(works[w]);
            continue;
          }
          wait_for(work);
          if (reads_result) note_failure(work);
        }
      }
    }
    // Skipping for a poison known at launch: the error passed on must be the oldest among every
    // input, also those whose device work is still running (oldest error wins, as on the CPU).
    // Error path only: the launcher waits for that work on the host here.
    if (!op->props.no_skip && !inputs.empty() &&
        oldest_poison(op, fence_error ? &fence_error : nullptr)) {
      for (const DeviceWorkRef& work : inputs) {
        wait_for(*work);
        note_failure(*work);
      }
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (!op->props.no_skip) {
    if (const ErrorRef* oldest = oldest_poison(op, fence_error ? &fence_error : nullptr)) {
      skip(op, *oldest, op->worker);
      return;
    }
  }
  // From the op's first enqueue on the stream to the event that closes its work, no other
  // launcher (another engine on this device) enqueues there: a failure of this op's work must
  // reach this op's event, and no other op's work may be skipped for it (stream.h).
  std::unique_lock stream_turn(stream.launch_mutex());
  const bool profiled = profiling::profiled(op);
  if (profiled) op->start_ns = profiling::now_ns();
  if (!error) {
    try {
      std::uint64_t cross_stream = 0;
      for (const auto& [work, reads_result] : device_waits) {
        // On this very stream, stream order already holds: only a wait that passes a failure on
        // is needed there. The waits on other streams are what StreamChooser keeps dependency
        // chains from paying.
        const bool same_stream = work->stream == &stream;
        if (same_stream && !reads_result) continue;
        if (!same_stream) ++cross_stream;
        if (reads_result) {
          stream.wait(work->done);
        } else {
          stream.wait_for_order(work->done);
        }
      }
      if (cross_stream != 0) cross_stream_waits_.fetch_add(cross_stream, std::memory_order_relaxed);
      if (profiled) {
        // The start marker sits after the waits, so it is when the op's work can begin. A
        // record closes the stream's error segment, so the waits that pass a failure on are
        // issued again behind it (they are already satisfied there, in stream order).
        op->start_event = stream.record(/*timing=*/true);
        for (const auto& [work, reads_result] : device_waits) {
          if (reads_result) stream.wait(work->done);
        }
      }
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) {
    op->destroy_callable();
  } else {
    error = run_body(op, op->worker);
    // The launch function threw while device work it reads may still fail. If that work fails,
    // this op was skipped and the upstream error is the one to pass on, which only the stream
    // will know: the error goes into the stream, behind the waits, and fails this op's work
    // only if the stream got that far (the device-side twin of skipping a poisoned op).
    if (error && !synchronize && !inputs.empty() && tracker != nullptr) {
      try {
        stream.enqueue_host([error] { std::rethrow_exception(error); }, {});
        deferred_launch_error = std::exchange(error, nullptr);
      } catch (...) {
        // Could not enqueue: report the launch function's error at once.
      }
    }
  }

  // The launch function's error, reported at once: its device work, if that fails too, fails
  // under the same record rather than as a second error (as the one exception of a CPU op).
  ErrorRef launch_record;
  if (error && !synchronize && !op->props.async_completion) {
    try {
      launch_record = record_failure(op, error);
    } catch (...) {
    }
  }

  // The body may have enqueued work even if it threw: fence (or wait for) it all the same, so
  // that nothing frees or overwrites memory the device still uses.
  bool fenced = false;
  if (!synchronize) {
    try {
      auto work = std::make_shared<DeviceWork>();
      work->done = stream.record(profiled);
      work->stream = &stream;
      work->push_sequence = op->push_sequence;
      work->op_name = op->props.name;
      work->device = op->device;
      // Untracked work is never pruned, so it must not keep its inputs alive.
      if (tracker != nullptr) {
        work->inputs.assign(std::make_move_iterator(inputs.begin()),
                            std::make_move_iterator(inputs.end()));
      }
      work->launch_error = deferred_launch_error;
      if (error) {
        // The op fails with its launch function's error; the vars it writes carry that poison,
        // so no later op inherits this work's failure (see launch_record).
        work->resolved = true;
        work->record = launch_record;
      }
      if (profiled) op->end_event = work->done;
      for (std::uint32_t i = 0; i < op->num_slots; ++i) {
        const VarSlot& slot = op->slots[i];
        VarState* var = slot.var;
        var->lock.lock();
        VarFences& fences = var->fences_for_update();
        if (slot.write) {
          fences.set_write(work);
        } else {
          fences.add_read(work);
        }
        var->lock.unlock();
      }
      if (tracker != nullptr) tracker->track(std::move(work));
      fenced = true;
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (fenced) {
    stream_turn.unlock();
  } else {
    // Per-op synchronization (the baseline mode, the naive engine), or fencing failed. The
    // event closes exactly this op's work, so its error is this op's (Stream::synchronize
    // would also report older failures of the shared stream).
    try {
      EventRef done = stream.record(profiled);
      stream_turn.unlock();
      if (profiled) op->end_event = done;
      done->synchronize();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (launch_record) {
    finish(op, launch_record, false);
    return;
  }
  end_body(op, error);
}

}  // namespace tandem::detail
