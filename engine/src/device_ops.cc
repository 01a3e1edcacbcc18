// EngineCore's accelerator side: launching an op on a stream, the fences it leaves on its vars,
// settling fences before CPU ops, and turning device failures into the engine's error records.
// docs/design.md ("Accelerators") explains the design: completion at launch plus per-var fences.
#include <algorithm>
#include <memory>

#include "engine_core.h"
#include "logging.h"
#include "profiler_recorder.h"
#include "tandem/errors.h"

namespace tandem::detail {

namespace {

// Device failures remembered for matching downstream skips; a program that keeps failing on the
// device must not grow this without bound.
constexpr std::size_t kMaxRememberedDeviceErrors = 1024;

}  // namespace

void EngineCore::wait_for(const DeviceWork& work) noexcept {
  if (work.done->query()) return;
  try {
    work.done->synchronize();
  } catch (...) {
    // The error is read from the event by whoever needs it.
  }
}

ErrorRef EngineCore::device_error(DeviceWork& work) {
  if (!work.done->error()) return nullptr;  // the common case: no lock
  std::lock_guard lock(device_errors_mutex_);
  return resolve_locked(work, /*look_earlier=*/true);
}

ErrorRef EngineCore::resolve_locked(DeviceWork& work, bool look_earlier) {
  if (work.resolved) return work.record;
  const std::exception_ptr error = work.done->error();
  if (!error) {
    work.resolved = true;
    return nullptr;
  }
  if (look_earlier) resolve_failures_before_locked(work.push_sequence);
  if (work.resolved) return work.record;  // resolved as an earlier failure's twin just now
  for (const auto& [known, record] : device_errors_) {
    if (known == error) {
      work.resolved = true;
      work.record = record;
      return record;
    }
  }
  // A failure of this op's own device work.
  ops_failed_.fetch_add(1, std::memory_order_relaxed);
  auto record = std::make_shared<ErrorRecord>(wrap_op_error(work.op_name, work.device, error),
                                              work.push_sequence);
  log().debug("device work of op '{}' on {} failed", work.op_name, to_string(work.device));
  errors_.record(record);
  if (device_errors_.size() >= kMaxRememberedDeviceErrors) {
    device_errors_.erase(device_errors_.begin(),
                         device_errors_.begin() + kMaxRememberedDeviceErrors / 2);
  }
  device_errors_.emplace_back(error, record);
  work.resolved = true;
  work.record = record;
  return record;
}

ErrorRef EngineCore::settle_fences(OpRecord* op) noexcept {
  ErrorRef oldest;
  std::vector<DeviceWorkRef> works;
  try {
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
        counts = slot.reads_value && !var->poison && var->fences->write != nullptr;
        // A CPU write ends the var's device history: once waited for, nothing runs on it.
        if (slot.write) var->clear_fences();
      }
      var->lock.unlock();
      for (const DeviceWorkRef& work : works) wait_for(*work);
      if (counts) {
        // collect() put the write fence first.
        if (ErrorRef error = device_error(*works.front())) {
          if (!oldest || error->op_sequence < oldest->op_sequence) oldest = error;
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
  // Device-side waits: (work, whether the op reads what it produced).
  std::vector<std::pair<DeviceWorkRef, bool>> device_waits;
  ErrorRef fence_error;
  try {
    if (op->needs_fence_sync.load(std::memory_order_relaxed)) {
      std::vector<DeviceWorkRef> works;
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
          // Same backend: the stream waits on the device. A no-skip op must run even after a
          // failure upstream, which a device-side wait would skip, so it waits on the host, as
          // does an op whose fence is another backend's event.
          if (work.device.kind == kind && !op->props.no_skip) {
            // Only the write fence of a var the op reads passes its failure on; the others
            // (write after write, write after read) only order.
            device_waits.emplace_back(works[w], counts && w == 0);
            continue;
          }
          wait_for(work);
          if (counts && w == 0) {
            if (ErrorRef e = device_error(work)) {
              if (!fence_error || e->op_sequence < fence_error->op_sequence) fence_error = e;
            }
          }
        }
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
  const bool profiled = profiling::profiled(op);
  if (profiled) op->start_ns = profiling::now_ns();
  if (!error) {
    try {
      for (const auto& [work, reads_result] : device_waits) {
        if (reads_result) {
          stream.wait(work->done);
        } else {
          stream.wait_for_order(work->done);
        }
      }
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
  if (!fenced) {
    // Per-op synchronization (the baseline mode, the naive engine), or fencing failed. The
    // event closes exactly this op's work, so its error is this op's (Stream::synchronize
    // would also report older failures of the shared stream).
    try {
      EventRef done = stream.record(profiled);
      if (profiled) op->end_event = done;
      done->synchronize();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  end_body(op, error);
}

}  // namespace tandem::detail
