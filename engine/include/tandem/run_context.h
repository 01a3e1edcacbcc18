// What an op's function sees while it runs.
//
//   engine.push([](tandem::RunContext& ctx) { ... ctx.device() ... }, tandem::cpu(), {}, {out});
//
// An op pushed with `.async_completion = true` takes its completion and invokes it when its
// work is really done, from any thread:
//
//   engine.push([&](tandem::RunContext& ctx) {
//     io_pool.submit([done = ctx.take_completion()]() mutable { read_file(); done(); });
//   }, tandem::cpu(), {}, {buffer}, {.name = "read", .async_completion = true});
#pragma once

#include <exception>

#include "tandem/device.h"

namespace tandem {

class Stream;

namespace detail {
struct OpRecord;
}

// One-shot completion of an asynchronous op. Movable, not copyable. Destroying it without
// invoking it completes the op with an error, so a forgotten completion is reported at the next
// sync point rather than hanging it.
class Completion {
 public:
  Completion() = default;
  explicit Completion(detail::OpRecord* op) : op_(op) {}
  Completion(Completion&& other) noexcept : op_(other.op_) { other.op_ = nullptr; }
  Completion& operator=(Completion&& other) noexcept;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  ~Completion();

  // The op succeeded.
  void operator()() { finish(nullptr); }
  // The op failed: its writes are poisoned with `error`.
  void fail(std::exception_ptr error) { finish(error); }
  bool pending() const { return op_ != nullptr; }

 private:
  void finish(std::exception_ptr error);
  detail::OpRecord* op_ = nullptr;
};

class RunContext {
 public:
  explicit RunContext(detail::OpRecord* op, int worker) : op_(op), worker_(worker) {}

  Device device() const;
  const char* op_name() const;
  // Index of the lane running the op:
  // - a CPU op on a pool worker: [0, P), where P = Engine::worker_lanes() -
  //   Engine::priority_workers() is the pool's size, Engine::cpu_workers() unless a oneTBB cap
  //   keeps some of its workers from running;
  // - a CPU op on priority lane i: P + i, i in [0, Engine::priority_workers()) (only urgent ops,
  //   priority > 0 or a copy queue, run on the lanes; pool workers take priority ops too, ahead
  //   of other ops, and copy-queue ops only while no lane is idle, so an urgent op may see either
  //   range);
  //   every CPU op's index is below Engine::worker_lanes();
  // - an accelerator op: its stream's index among the device's streams of its queue
  //   (compute: [0, AcceleratorConfig::compute_streams), other queues: 0);
  // - -1 when it runs inline in the pushing or waiting thread (the naive engine, and any engine
  //   after the process started exiting).
  int worker() const { return worker_; }
  // The stream an accelerator op enqueues its work on (its queue on its device, picked by the
  // engine); nullptr for CPU ops.
  Stream* stream() const;
  // Only for ops pushed with `async_completion`; call at most once.
  Completion take_completion();

 private:
  detail::OpRecord* op_;
  int worker_;
};

}  // namespace tandem
