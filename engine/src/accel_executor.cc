#include "accel_executor.h"

#include <exception>
#include <utility>

#include "base/logging.h"

namespace tandem::detail {

AcceleratorExecutor::AcceleratorExecutor(Accelerator& accelerator, EngineCore& engine,
                                         bool synchronize_each_op, std::chrono::microseconds spin)
    : accelerator_(accelerator),
      engine_(engine),
      synchronize_each_op_(synchronize_each_op),
      spin_(spin),
      launcher_([this] { run(); }) {}

AcceleratorExecutor::~AcceleratorExecutor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  launcher_.join();
}

void AcceleratorExecutor::submit(OpRecord* op) {
  {
    std::lock_guard lock(mutex_);
    op->ready_sequence = next_sequence_++;
    ready_.push(op);
    queued_.store(ready_.size(), std::memory_order_release);
  }
  wake_.notify_one();
}

void AcceleratorExecutor::run() {
  // Once per launcher thread, before any launch function runs: user kernels and cuBLAS calls in
  // launch functions use the thread's current device, which must be this executor's device.
  bool bound = false;
  try {
    accelerator_.bind_thread();
    bound = true;
  } catch (const std::exception& e) {
    log().error("tandem: the launcher thread of {} could not make it current: {}",
                to_string(accelerator_.device()), e.what());
  }
  for (;;) {
    // Before sleeping, look for the next op for a while: a front end pushing one small op after
    // another hands each over a few microseconds after the last launch, and waking a sleeping
    // launcher (a futex wake, then the scheduler) cost more than the launch itself (issue 22,
    // H100: 15.7 us per dependent `y = y + 1` against PyTorch's 8.2). Each look yields the
    // core, so a pusher on the same core runs.
    if (spin_.count() > 0 && queued_.load(std::memory_order_acquire) == 0) {
      const auto deadline = std::chrono::steady_clock::now() + spin_;
      while (queued_.load(std::memory_order_acquire) == 0 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
    }
    OpRecord* op = nullptr;
    {
      std::unique_lock lock(mutex_);
      if (ready_.empty() && !stopping_ && launches_since_prune_ > 0) {
        // About to sleep: drop what has ended meanwhile (its events, its chains of inputs).
        lock.unlock();
        prune();
        launches_since_prune_ = 0;
        lock.lock();
      }
      wake_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
      if (ready_.empty()) return;  // stopping and nothing left
      op = ready_.top();
      ready_.pop();
      queued_.store(ready_.size(), std::memory_order_release);
    }
    if (!bound) {
      // Retried per op: a launch on an unbound thread would reach the wrong device.
      try {
        accelerator_.bind_thread();
        bound = true;
      } catch (...) {
      }
    }
    engine_.launch(op, streams_.choose(accelerator_, *op), synchronize_each_op_, this);
    if (++launches_since_prune_ == kLaunchesPerPrune) {
      prune();
      launches_since_prune_ = 0;
    }
  }
}

void AcceleratorExecutor::track(DeviceWorkRef work) {
  std::lock_guard lock(outstanding_mutex_);
  outstanding_.push_back(std::move(work));
}

std::vector<DeviceWorkRef> AcceleratorExecutor::outstanding() const {
  std::lock_guard lock(outstanding_mutex_);
  return {outstanding_.begin(), outstanding_.end()};
}

void AcceleratorExecutor::prune() {
  std::vector<DeviceWorkRef> failed;
  std::size_t ended = 0;
  {
    std::lock_guard lock(outstanding_mutex_);
    while (ended < outstanding_.size() && outstanding_[ended]->done->query()) {
      DeviceWork& work = *outstanding_[ended];
      if (work.done->error()) {
        failed.push_back(outstanding_[ended]);
      } else {
        // Succeeded: nothing will ask where a failure came from, so the chain of inputs ends
        // here (error resolution never touches work that succeeded; see resolve_locked).
        work.inputs.clear();
      }
      ++ended;
    }
  }
  if (ended == 0) return;
  // Resolve before dropping: wait_all only sees the work still outstanding, and a failure whose
  // vars were overwritten meanwhile must still be reported.
  for (const DeviceWorkRef& work : failed) {
    try {
      engine_.device_error(*work);
    } catch (...) {
      log().error("could not record the device error of op '{}'", work->op_name);
    }
  }
  std::lock_guard lock(outstanding_mutex_);
  outstanding_.erase(outstanding_.begin(), outstanding_.begin() + static_cast<long>(ended));
}

}  // namespace tandem::detail
