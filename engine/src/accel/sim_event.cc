#include "sim_event.h"

namespace tandem::detail {

void SimEvent::wait() const {
  while (done_.load(std::memory_order_acquire) == 0) done_.wait(0, std::memory_order_acquire);
}

void SimEvent::synchronize() {
  wait();
  if (error_) std::rethrow_exception(error_);
}

void SimEvent::complete(std::exception_ptr error, std::int64_t now_ns) {
  error_ = std::move(error);
  time_ns_ = now_ns;
  done_.store(1, std::memory_order_release);
  done_.notify_all();
}

}  // namespace tandem::detail
