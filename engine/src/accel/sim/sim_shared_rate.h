// SimSharedRate: the compute capacity of one sim device, shared by its compute streams.
//
// A real accelerator's streams share its multiprocessors and memory bandwidth: two kernels
// launched on two streams of one device do not finish in the time of one. The sim device models
// that with processor sharing: each kernel needs `work`, the time it would take alone at the
// device's full rate (max(flops / compute rate, bytes / memory bandwidth), so compute-bound and
// memory-bound kernels share alike), and while k kernels run, each progresses at 1/k of the full
// rate. Two equal kernels started together both end after twice the time of one; a short kernel
// started beside a long one ends after twice its own time and then gives the long one the whole
// device back. Copy and comm streams are not part of it: they model the device's copy engines
// and the bus, which have their own rates.
//
// The schedule is computed from the start times and work alone, never from when the stream
// threads happen to wake, so it is exact however late a thread looks at it:
// - `service_ns_` is the work every running kernel has received since this object was created
//   (full-rate nanoseconds); it grows at 1 / running() per nanosecond of real time.
// - A kernel started when the service was s with work w ends when the service reaches s + w.
//   Kernels therefore end in the order of those targets, which `running_` keeps sorted.
// - advance(now) replays the ends due by `now` in that order, each at the exact time the service
//   reached its target, and notes the time for the kernel's stream (finished_).
// A finish time seen by a stream can only move later (when another kernel starts), never earlier:
// the ends of the kernels ahead of it are already in it. So a stream sleeps until the finish time
// it was told, then asks again, and stops once the answer is not later than the clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tandem::detail {

class SimSharedRate {
 public:
  using Clock = std::chrono::steady_clock;
  using Ticket = std::uint64_t;

  SimSharedRate();

  // A kernel that needs `work` of the full device starts at `now`. Work of zero or less ends at
  // once (its finish time is `now`).
  Ticket start(Clock::time_point now, std::chrono::nanoseconds work);
  // When the kernel ends if no other kernel starts after `now`. Once the answer is not later than
  // `now` the kernel has ended and the ticket is spent: ask again only while the answer is later.
  Clock::time_point finish_time(Ticket ticket, Clock::time_point now);
  // Kernels sharing the device at `now`.
  int running(Clock::time_point now);

 private:
  struct Running {
    double service_target_ns;  // the value of service_ns_ at which the kernel ends
    Ticket ticket;
  };
  struct Finished {
    Ticket ticket;
    double at_ns;  // since origin_
  };

  double since_origin_ns(Clock::time_point t) const;
  Clock::time_point at(double since_origin_ns) const;
  // Moves the schedule to `now_ns`, ending every kernel whose target the service reaches by then.
  void advance(double now_ns);

  const Clock::time_point origin_;
  std::mutex mutex_;
  double updated_ns_ = 0;  // the time service_ns_ was last brought up to date, since origin_
  double service_ns_ = 0;
  Ticket next_ticket_ = 1;
  std::vector<Running> running_;    // sorted by service_target_ns (ties: start order)
  std::vector<Finished> finished_;  // ended, not yet seen by their stream
};

}  // namespace tandem::detail
