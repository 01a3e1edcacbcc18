#include "sim_shared_rate.h"

#include <algorithm>

namespace tandem::detail {

SimSharedRate::SimSharedRate() : origin_(Clock::now()) {}

double SimSharedRate::since_origin_ns(Clock::time_point t) const {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count());
}

SimSharedRate::Clock::time_point SimSharedRate::at(double since_origin_ns) const {
  // Rounded up, so that a stream that sleeps until this time finds the kernel ended.
  const auto ns = static_cast<std::int64_t>(since_origin_ns);
  return origin_ +
         std::chrono::nanoseconds(static_cast<double>(ns) < since_origin_ns ? ns + 1 : ns);
}

void SimSharedRate::advance(double now_ns) {
  // Threads read the clock before they take the lock: a slightly older `now` changes nothing.
  now_ns = std::max(now_ns, updated_ns_);
  while (!running_.empty()) {
    const Running& first = running_.front();
    const double sharing = static_cast<double>(running_.size());
    const double ends_ns = updated_ns_ + (first.service_target_ns - service_ns_) * sharing;
    if (ends_ns > now_ns) break;
    service_ns_ = first.service_target_ns;
    updated_ns_ = ends_ns;
    finished_.push_back({first.ticket, ends_ns});
    running_.erase(running_.begin());
  }
  if (!running_.empty()) {
    service_ns_ += (now_ns - updated_ns_) / static_cast<double>(running_.size());
  }
  updated_ns_ = now_ns;
}

SimSharedRate::Ticket SimSharedRate::start(Clock::time_point now, std::chrono::nanoseconds work) {
  std::lock_guard lock(mutex_);
  advance(since_origin_ns(now));
  const Ticket ticket = next_ticket_++;
  if (work.count() <= 0) {
    finished_.push_back({ticket, updated_ns_});
    return ticket;
  }
  const Running kernel{service_ns_ + static_cast<double>(work.count()), ticket};
  const auto after = std::upper_bound(
      running_.begin(), running_.end(), kernel.service_target_ns,
      [](double target, const Running& other) { return target < other.service_target_ns; });
  running_.insert(after, kernel);
  return ticket;
}

SimSharedRate::Clock::time_point SimSharedRate::finish_time(Ticket ticket, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  advance(since_origin_ns(now));
  const auto ended = std::find_if(finished_.begin(), finished_.end(),
                                  [ticket](const Finished& f) { return f.ticket == ticket; });
  if (ended != finished_.end()) {
    const double at_ns = ended->at_ns;
    finished_.erase(ended);
    return at(at_ns);
  }
  // Still running: replay the ends of the kernels ahead of it (and its own) with no new starts.
  double time_ns = updated_ns_;
  double service_ns = service_ns_;
  double sharing = static_cast<double>(running_.size());
  for (const Running& kernel : running_) {
    time_ns += (kernel.service_target_ns - service_ns) * sharing;
    service_ns = kernel.service_target_ns;
    sharing -= 1;
    if (kernel.ticket == ticket) return at(time_ns);
  }
  return at(updated_ns_);  // an unknown or spent ticket: nothing to wait for
}

int SimSharedRate::running(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  advance(since_origin_ns(now));
  return static_cast<int>(running_.size());
}

}  // namespace tandem::detail
