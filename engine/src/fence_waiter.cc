#include "fence_waiter.h"

#include <utility>

#include "cpu_executor.h"

namespace tandem::detail {

void FenceWaiter::stop() {
  std::thread thread;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  wake_.notify_all();
  if (thread.joinable()) thread.join();
}

void FenceWaiter::submit(OpRecord* op) {
  {
    std::lock_guard lock(mutex_);
    waiting_.push_back(op);
    if (!thread_.joinable()) {
      try {
        thread_ = std::thread([this] { run(); });
      } catch (...) {
        waiting_.pop_back();  // not taken: the caller runs it on a worker
        throw;
      }
    }
  }
  wake_.notify_one();
}

void FenceWaiter::run() {
  for (;;) {
    OpRecord* op = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
      if (waiting_.empty()) return;  // stopping and nothing left
      op = waiting_.front();
      waiting_.pop_front();
    }
    engine_.wait_for_fences(op);
    cpu_.submit(op);
  }
}

}  // namespace tandem::detail
