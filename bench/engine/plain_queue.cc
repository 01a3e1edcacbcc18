#include "plain_queue.h"

namespace tandem::bench {

PlainQueue::PlainQueue(int workers) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { serve(); });
}

PlainQueue::~PlainQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void PlainQueue::push(Work work, std::span<const Var> /*reads*/, std::span<const Var> /*writes*/) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(work);
    ++unfinished_;
  }
  work_ready_.notify_one();
}

void PlainQueue::wait_all() {
  std::unique_lock lock(mutex_);
  all_done_.wait(lock, [this] { return unfinished_ == 0; });
}

void PlainQueue::serve() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    const Work work = queue_.front();
    queue_.pop_front();
    lock.unlock();
    run_work(work);
    lock.lock();
    if (--unfinished_ == 0) all_done_.notify_all();
  }
}

}  // namespace tandem::bench
