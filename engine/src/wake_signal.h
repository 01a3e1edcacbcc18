// WakeSignal: a one-shot event one thread sets and another waits for. The setter notifies while
// holding the mutex, so the waiter may destroy the WakeSignal as soon as wait() returns.
//
// A waiter first looks at the flag for up to kSpin, yielding its core on every look, and only
// then sleeps on the condition variable: the waits it serves (wait_to_read behind a small op)
// are often over in a few microseconds, less than a futex sleep and wake-up take (issue 22: a
// `wait_to_read` per tiny op on a GPU cost 46 us against PyTorch's 16 for a synchronize loop).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <type_traits>

#include "base/fast_tls.h"

namespace tandem::detail {

class WakeSignal {
 public:
  static constexpr std::chrono::microseconds kSpin{50};

  void set() {
    // Set on the thread that waits (an op that ended inside the call that waits for it): no
    // other thread is inside set(), so no lock, and is_set() need not settle.
    if (tls_waiting_here == this) {
      set_here_ = true;
      flag_.store(true, std::memory_order_relaxed);
      return;
    }
    std::lock_guard lock(mutex_);
    done_ = true;
    flag_.store(true, std::memory_order_release);
    ready_.notify_all();
  }
  void wait() {
    if (spin_until(std::chrono::steady_clock::now() + kSpin)) return settle();
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return done_; });
  }
  // False if `deadline` passed first.
  template <class TimePoint>
  bool wait_until(TimePoint deadline) {
    auto spin_end = std::chrono::steady_clock::now() + kSpin;
    if constexpr (std::is_same_v<TimePoint, std::chrono::steady_clock::time_point>) {
      spin_end = std::min(spin_end, deadline);
    }
    if (spin_until(spin_end)) {
      settle();
      return true;
    }
    std::unique_lock lock(mutex_);
    return ready_.wait_until(lock, deadline, [this] { return done_; });
  }
  // True once set() has run to its end, so the caller may destroy this object: a set flag is
  // not enough, the setter may still be inside notify_all and the unlock (TSan caught the naive
  // engine destroying the signal of an async op's Completion under a setter's broadcast).
  bool is_set() {
    if (!flag_.load(std::memory_order_acquire)) return false;
    if (!set_here_) settle();
    return true;
  }

  // Marks the calling thread as this signal's waiter while `scope` lives: a set() it makes
  // itself meanwhile skips the mutex (the naive engine's synchronous ops, one per push).
  class WaitingHere {
   public:
    explicit WaitingHere(WakeSignal& signal) : outer_(tls_waiting_here) {
      tls_waiting_here = &signal;
    }
    ~WaitingHere() { tls_waiting_here = outer_; }
    WaitingHere(const WaitingHere&) = delete;
    WaitingHere& operator=(const WaitingHere&) = delete;

   private:
    WakeSignal* outer_;
  };

 private:
  bool spin_until(std::chrono::steady_clock::time_point end) const {
    while (!flag_.load(std::memory_order_acquire)) {
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::yield();
    }
    return true;
  }
  // The flag is seen set: wait for set() to let go of the mutex, after which the waiter may
  // destroy this object.
  void settle() { std::lock_guard lock(mutex_); }

  static inline thread_local WakeSignal* tls_waiting_here TANDEM_FAST_TLS = nullptr;

  std::mutex mutex_;
  std::condition_variable ready_;
  bool set_here_ = false;           // set() ran on the waiting thread (written before flag_)
  bool done_ = false;               // guarded by mutex_
  std::atomic<bool> flag_ = false;  // done_, readable without the lock
};

}  // namespace tandem::detail
