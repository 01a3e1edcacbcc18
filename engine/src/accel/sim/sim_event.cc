#include "sim_event.h"

#include <chrono>
#include <thread>

namespace tandem::detail {

void SimEvent::wait() const {
  // Events are usually waited on by another stream's thread a few microseconds before they
  // complete: poll briefly before sleeping (a futex wake-up costs tens of microseconds here).
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(30);
  while (done_.load(std::memory_order_acquire) == 0 &&
         std::chrono::steady_clock::now() < spin_until) {
    std::this_thread::yield();
  }
  while (done_.load(std::memory_order_acquire) == 0) done_.wait(0, std::memory_order_acquire);
}

void SimEvent::synchronize() {
  wait();
  if (error_) std::rethrow_exception(error_);
}

void SimEvent::complete(std::exception_ptr error, std::int64_t at_ns) {
  error_ = std::move(error);
  time_ns_ = at_ns;
  done_.store(1, std::memory_order_release);
  done_.notify_all();
}

}  // namespace tandem::detail
