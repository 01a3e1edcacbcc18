// Stream: an in-order queue of work on one accelerator, the one interface that the engine's
// accelerator workers drive for `cuda(i)` and `sim(i)` alike.
//
//   engine.push([](tandem::RunContext& ctx) {
//     tandem::Stream& stream = *ctx.stream();          // the op's queue on its device
//     stream.enqueue_host([=] { kernel_on_cpu(); }, {.flops = 2.0 * n});   // sim
//     launch_kernel<<<grid, block, 0, cuda_stream(stream)>>>(...);           // cuda
//   }, tandem::sim(0), {in}, {out}, {.name = "scale"});
//
// The rule for an accelerator op's memory accesses. The op's function (its launch function)
// runs on the device's launcher thread as soon as its vars are granted, which may be before the
// device work of earlier ops on those vars has run. So it only computes pointers, allocates and
// enqueues; it never reads or writes the memory behind its vars. That memory is touched by the
// work it enqueues (kernels, copy(), enqueue_host() items), which the engine orders after the
// work of every earlier op on the op's vars: a device-side wait for the same backend (any of
// its streams), a host-side wait for another backend, nothing after a CPU op (it has finished).
// For example, a host-to-device copy from pageable memory stages the host bytes in an
// enqueue_host() item, not in the launch function: the host array may be the output of a
// device-to-host copy that has not run yet.
//
// Invariants every backend keeps:
// - Work on one stream runs in enqueue order, one item at a time.
// - `record()` returns an event that completes when everything enqueued before it on this
//   stream has finished; `wait(e)` makes everything enqueued after it wait for `e`, without
//   blocking the calling thread. Events of any stream of any device of the same backend kind
//   may be waited on.
// - Errors: work that fails (a sim item that throws, a CUDA launch or kernel error) makes the
//   next event recorded on that stream carry the error; `synchronize()` throws it. A stream that
//   waits on a failed event skips its work up to its next `record()`, and that event carries
//   the same error: device work downstream of a failure is skipped like a poisoned op.
// - Streams are process-wide: every engine that runs ops on a device shares its streams. Since a
//   failure reaches the next event recorded on the stream, whoever enqueues work and then
//   records the event that stands for it holds `launch_mutex()` in between, so that no other
//   thread's work or event falls between the two (the engine does for every op it launches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

#include "tandem/accel/device_graph.h"
#include "tandem/device.h"
#include "tandem/op_props.h"

namespace tandem {

// What a piece of device work costs, for the sim device's model; cuda ignores it. A sim stream
// holds an item for `latency + max(flops / compute rate, bytes / memory or bus bandwidth)`,
// or for as long as its CPU body really takes when that is longer.
struct WorkCost {
  double flops = 0;  // arithmetic operations
  double bytes = 0;  // bytes moved (memory traffic for kernels, bus traffic for copies)
};

// A point in a stream's work. Shared: fences on vars, waiting streams and the profiler may all
// hold the same event.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  // True once the work recorded before it has ended (with or without an error). Never blocks.
  virtual bool query() = 0;
  // Blocks the calling thread until query() is true, then throws the work's error, if any.
  virtual void synchronize() = 0;
  // The error the work ended with (null if none or not done yet).
  virtual std::exception_ptr error() = 0;
  // steady_clock time (ns since its epoch) at which the device reached the event; only for
  // events recorded with timing, after query() is true. -1 otherwise.
  virtual std::int64_t time_ns() = 0;
  virtual Device device() const = 0;
};
using EventRef = std::shared_ptr<DeviceEvent>;

class Stream {
 public:
  virtual ~Stream() = default;

  virtual Device device() const = 0;
  virtual Queue queue() const = 0;
  // Index among the device's streams of this queue (compute streams: 0..N-1; others: 0).
  virtual int index() const = 0;
  // "sim(0) compute 1", "gpu(0) h2d": the profiler's lane name.
  virtual const char* name() const = 0;

  // Work enqueued after this call waits for `event` (device-side; the caller does not block).
  // Waiting on an event of this same stream is a no-op.
  virtual void wait(const EventRef& event) = 0;
  // Like wait(), for ordering only: a failure of `event` does not skip this stream's work. The
  // engine uses it where the later work does not read what the earlier work produced (a write
  // after a write, a write after a read). The default waits like wait(), which orders just as
  // well but lets the earlier failure skip the later work; backends override it.
  virtual void wait_for_order(const EventRef& event) { wait(event); }
  // An event for everything enqueued so far. `timing`: the event also records when the device
  // reached it (costs a little more on cuda).
  virtual EventRef record(bool timing = false) = 0;

  // Runs `work` on the host in stream order. sim: on the stream's own thread, held for the
  // modelled duration of `cost` (this is how sim kernels and copies run). cuda: as a host
  // function in stream order (cudaLaunchHostFunc; `work` must not call CUDA). An exception
  // from `work` fails the stream's next event.
  virtual void enqueue_host(std::function<void()> work, WorkCost cost) = 0;

  // Asynchronous copy of `bytes` between any two of: this device's memory, another device of
  // the same kind's memory, pinned host memory from this backend. Pageable host memory must be
  // staged through pinned memory by the caller. sim: a memcpy held for the bus model.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;

  // Blocks the calling thread until all work enqueued so far has finished; throws its error.
  // For waits and tests, never for per-op completion.
  virtual void synchronize() = 0;

  // Device graphs (tandem/accel/device_graph.h). Between begin_graph_capture() and
  // end_graph_capture() (or abort_graph_capture()), the work enqueued on this stream is
  // recorded into a graph instead of run. One capture per stream at a time, by the thread that
  // drives the stream. A backend without graphs answers false to supports_graph_capture() and
  // throws tandem::Error from begin_graph_capture().
  virtual bool supports_graph_capture() const { return false; }
  virtual void begin_graph_capture();
  // Ends the capture and returns the graph; throws tandem::Error (the capture then ended
  // without a graph) if the runtime refuses it.
  virtual std::unique_ptr<DeviceGraph> end_graph_capture();
  // Ends the capture, dropping what was recorded (after an exception during it). No-op when
  // no capture is open.
  virtual void abort_graph_capture() noexcept {}

  // Held from an op's first enqueue on this stream (its waits) to the event that closes its
  // work. Recursive: a launch function may push to a naive engine, which launches at once on
  // the same thread.
  std::recursive_mutex& launch_mutex() noexcept { return launch_mutex_; }

 private:
  std::recursive_mutex launch_mutex_;
};

}  // namespace tandem
