// OpProps: how an op is scheduled. Everything has a sensible default, so
//   engine.push(fn, tandem::cpu(), {in}, {out}, {.name = "scale"});
// is the common spelling.
#pragma once

#include <cstdint>

namespace tandem {

// The worker queue an op goes to on its device. On an accelerator each queue is its own stream
// (compute streams, one stream per copy direction) so copies overlap compute. On the CPU,
// `compute` runs on the worker pool and every other queue on the priority lane.
enum class Queue : std::uint8_t { compute, copy_h2d, copy_d2h, copy_d2d, comm };

const char* queue_name(Queue queue);

struct OpProps {
  // Shown in errors, logs and traces. Must stay valid until the op has finished: a string
  // literal always does.
  const char* name = "op";
  Queue queue = Queue::compute;
  // Higher runs first among ready ops; equal priorities run in push order (FIFO). On the CPU an
  // op with priority > 0 may also run on the priority lane, so it never waits behind long
  // compute ops.
  int priority = 0;
  // The op signals its own completion: it calls ctx.take_completion() and invokes the returned
  // Completion later, from any thread (a GPU stream callback, an I/O thread...). The op's writes
  // stay locked, and its reads held, until then.
  bool async_completion = false;
  // Run even when an input is poisoned by an earlier error (cleanup, logging, deleters).
  bool no_skip = false;
  // A CPU op cheaper than handing it to a worker (a few hundred nanoseconds of work at most):
  // when every var it uses is free at push, the threaded engine runs it at once on the pushing
  // thread, as the naive engine does, instead of waking a worker for it. An op that must wait
  // for a var is queued as usual, so it still overlaps with the work it waits for. An async op's
  // body runs inline, its Completion later. Ignored for accelerator ops, nested pushes, profiling.
  bool inline_when_ready = false;
};

}  // namespace tandem
