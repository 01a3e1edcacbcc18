// WakeSignal: a one-shot event one thread sets and another waits for. The setter notifies while
// holding the mutex, so the waiter may destroy the WakeSignal as soon as wait() returns.
#pragma once

#include <condition_variable>
#include <mutex>

namespace tandem::detail {

class WakeSignal {
 public:
  void set() {
    std::lock_guard lock(mutex_);
    done_ = true;
    ready_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return done_; });
  }
  // False if `deadline` passed first.
  template <class TimePoint>
  bool wait_until(TimePoint deadline) {
    std::unique_lock lock(mutex_);
    return ready_.wait_until(lock, deadline, [this] { return done_; });
  }
  bool is_set() {
    std::lock_guard lock(mutex_);
    return done_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  bool done_ = false;
};

}  // namespace tandem::detail
