#include "sim_stream.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "tandem/detail/fault_injection.h"
#include "tandem/errors.h"

namespace tandem::detail {

namespace {

std::int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// How long before the end of a modelled duration a stream stops sleeping and spins. A sleep is
// coarse: on the project's VMs a 5 us sleep lasts 30-80 us (timer slack, wake-up latency), which
// would make every short kernel or copy take ~10x its modelled time. Sleeping until this much
// before the end and spinning (yielding) for the rest keeps a stream within a few microseconds
// of the model, for at most this much CPU per item.
constexpr auto kSpinTail = std::chrono::microseconds(100);

// The default timer slack (50 us) lets the kernel end a sleep that much late; a stream's sleeps
// model device time, so it asks for none.
void use_precise_timers() {
#ifdef __linux__
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
}

}  // namespace

void wait_until_precisely(std::chrono::steady_clock::time_point deadline) {
  if (deadline - std::chrono::steady_clock::now() > kSpinTail) {
    std::this_thread::sleep_until(deadline - kSpinTail);
  }
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

std::chrono::nanoseconds SimStreamModel::work(const WorkCost& cost) const {
  const double compute_s = flops_per_s > 0 ? cost.flops / flops_per_s : 0.0;
  const double transfer_s = bytes_per_s > 0 ? cost.bytes / bytes_per_s : 0.0;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::max(compute_s, transfer_s) * 1e9));
}

std::chrono::nanoseconds SimStreamModel::duration(const WorkCost& cost) const {
  return latency + work(cost);
}

SimStream::SimStream(Device device, Queue queue, int index, std::string name, SimStreamModel model)
    : device_(device),
      queue_(queue),
      index_(index),
      name_(std::move(name)),
      model_(model),
      thread_([this] { run(); }) {}

SimStream::~SimStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  not_empty_.notify_all();
  thread_.join();
}

void SimStream::push(Item item) {
  {
    std::unique_lock lock(mutex_);
    if (capture_) {
      record_in_capture(item);
      return;
    }
    not_full_.wait(lock, [this] { return items_.size() < kCapacity; });
    item.enqueued = std::chrono::steady_clock::now();
    items_.push_back(std::move(item));
    queued_.fetch_add(1, std::memory_order_release);
  }
  not_empty_.notify_one();
}

void SimStream::wait(const EventRef& event) {
  push_wait(event, /*inherit_error=*/true);
}

void SimStream::wait_for_order(const EventRef& event) {
  push_wait(event, /*inherit_error=*/false);
}

void SimStream::push_wait(const EventRef& event, bool inherit_error) {
  if (!event) return;
  auto sim_event = std::dynamic_pointer_cast<SimEvent>(event);
  if (!sim_event) {
    throw Error("tandem: " + name_ + " cannot wait on an event of " + to_string(event->device()) +
                ": only events of sim devices can be waited on");
  }
  Item item;
  item.kind = Kind::wait;
  item.event = std::move(sim_event);
  item.inherit_error = inherit_error;
  push(std::move(item));
}

EventRef SimStream::record(bool timing) {
  auto event = std::make_shared<SimEvent>(device_, timing);
  Item item;
  item.kind = Kind::record;
  item.event = event;
  push(std::move(item));
  return event;
}

// Test-only (tandem/detail/fault_injection.h): a launch refused, as a full or broken CUDA launch
// queue refuses one, before anything is enqueued.
void SimStream::inject_launch_fault(const char* what) const {
  if (!detail::inject_fault(testing::FaultKind::sim_launch)) return;
  throw Error("tandem: " + name_ + ": launching a " + what + " failed" +
              detail::injected_fault_note(testing::FaultKind::sim_launch));
}

void SimStream::enqueue_host(std::function<void()> work, WorkCost cost) {
  if (detail::faults_armed()) inject_launch_fault("kernel");
  Item item;
  item.kind = Kind::host;
  item.work = std::move(work);
  item.cost = cost;
  push(std::move(item));
}

void SimStream::copy(void* dst, const void* src, std::size_t bytes) {
  if (detail::faults_armed()) inject_launch_fault("copy");
  Item item;
  item.kind = Kind::copy;
  item.cost.bytes = static_cast<double>(bytes);
  item.dst = dst;
  item.src = src;
  push(std::move(item));
}

void SimStream::synchronize() {
  auto event = std::static_pointer_cast<SimEvent>(record());
  event->wait();
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = std::exchange(unreported_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

void SimStream::run() {
  use_precise_timers();
  for (;;) {
    Item item;
    // A device picks up queued work at once; a thread asleep on a condition variable takes
    // tens of microseconds to wake. Look for work for a short while before sleeping.
    const auto spin_until = std::chrono::steady_clock::now() + kIdleSpin;
    while (queued_.load(std::memory_order_acquire) == 0 &&
           std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
    }
    {
      std::unique_lock lock(mutex_);
      not_empty_.wait(lock, [this] { return stopping_ || !items_.empty(); });
      if (items_.empty()) return;  // stopping, and everything enqueued has run
      item = std::move(items_.front());
      items_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    not_full_.notify_one();
    process(item);
  }
}

void SimStream::fail(std::exception_ptr error) {
  if (segment_error_) return;
  segment_error_ = error;
  std::lock_guard lock(mutex_);
  if (!unreported_) unreported_ = std::move(error);
}

template <class Body>
SimStream::TimePoint SimStream::hold(TimePoint begin, const WorkCost& cost, Body&& body) {
  count_modelled(model_.duration(cost));
  if (segment_error_) return begin;  // downstream of a failure: skipped, like a poisoned op
  // Test-only: the item fails on the device, as a faulting kernel does; the record after it
  // completes its event with the error.
  if (detail::faults_armed() && detail::inject_fault(testing::FaultKind::sim_kernel)) {
    fail(std::make_exception_ptr(
        Error("tandem: " + name_ + ": a kernel or copy failed on the device" +
              detail::injected_fault_note(testing::FaultKind::sim_kernel))));
    return begin;
  }
  SimSharedRate* const shared = model_.shared_rate.get();
  // The share starts at the item's device time, with the body, so a body that really takes
  // longer is not charged twice.
  const SimSharedRate::Ticket ticket = shared ? shared->start(begin, model_.work(cost)) : 0;
  const auto body_start = std::chrono::steady_clock::now();
  try {
    body();
  } catch (...) {
    fail(std::current_exception());
  }
  const TimePoint body_end = begin + (std::chrono::steady_clock::now() - body_start);
  if (!shared) {
    const TimePoint end = std::max(begin + model_.duration(cost), body_end);
    wait_until_precisely(end);
    return end;
  }
  return std::max(wait_for_share(*shared, ticket, model_.latency), body_end);
}

SimStream::TimePoint SimStream::wait_for_share(SimSharedRate& shared, std::uint64_t ticket,
                                               std::chrono::nanoseconds after) {
  // A finish time only moves later (other kernels start), so sleep until it and ask again.
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    const auto share_ends = shared.finish_time(ticket, now);
    if (share_ends <= now) {
      wait_until_precisely(share_ends + after);
      return share_ends + after;
    }
    wait_until_precisely(share_ends);
  }
}

void SimStream::process(Item& item) {
  // The device reaches the item once it is done with the one before and the item is enqueued;
  // both are in the past (device_clock_'s invariant), however late this thread got here.
  const TimePoint begin = std::max(device_clock_, item.enqueued);
  switch (item.kind) {
    case Kind::host:
      device_clock_ = hold(begin, item.cost, item.work);
      item.work = nullptr;  // captures (buffers, pools) go before the next item runs
      break;
    case Kind::copy:
      device_clock_ = hold(begin, item.cost, [&] {
        const auto bytes = static_cast<std::size_t>(item.cost.bytes);
        if (bytes > 0) std::memmove(item.dst, item.src, bytes);
      });
      break;
    case Kind::wait: {
      item.event->wait();
      if (std::exception_ptr error = item.event->error(); error && item.inherit_error) fail(error);
      // The event was reached (on its own stream's device clock) no later than now.
      const TimePoint reached{std::chrono::nanoseconds(item.event->reached_ns())};
      device_clock_ = std::max(begin, reached);
      break;
    }
    case Kind::record:
      item.event->complete(std::exchange(segment_error_, nullptr), steady_ns(begin));
      device_clock_ = begin;
      break;
    case Kind::graph:
      device_clock_ = run_graph(begin, *item.graph);
      item.graph.reset();
      break;
  }
}

}  // namespace tandem::detail
