// DeviceGraph: work of one stream recorded once and launched as one unit, many times.
//
//   stream.begin_graph_capture();
//   stream.enqueue_host([=] { kernel(a, b); }, {.flops = n});  // recorded, not run
//   stream.copy(dst, src, bytes);                              // recorded, not run
//   std::unique_ptr<tandem::DeviceGraph> graph = stream.end_graph_capture();
//   for (int i = 0; i < 100; ++i) graph->launch(stream);       // runs both, in order
//
// The engine uses it for captured windows (tandem/graph.h): a run of accelerator ops of a window
// becomes one device graph on its first replay, and later replays launch it. cuda: a CUDA Graph
// (stream capture, instantiated once, cudaGraphLaunch per launch). sim: the recorded items run
// in order as one stream item that pays the launch latency once, plus each item's modelled
// work.
//
// Invariants every backend keeps:
// - A launch runs the recorded work in recording order, after everything enqueued before it
//   on the stream it is launched on, and before everything enqueued after. The recorded work
//   keeps its pointers and arguments: what it reads and writes must stay valid (and in place)
//   for the graph's whole life.
// - Errors follow tandem/accel/stream.h: work of a launch that fails makes the stream's next
//   event carry the error, and the rest of that launch is skipped; a launch behind a failed
//   wait is skipped.
// - Between begin_graph_capture and end_graph_capture only enqueue_host (sim) and copy (sim,
//   cuda) and kernels on the stream's handle (cuda) may be used: wait(), record(),
//   synchronize() and (cuda) enqueue_host() throw tandem::Error, leaving the capture open for
//   abort_graph_capture.
#pragma once

#include <cstddef>

#include "tandem/device.h"

namespace tandem {

class Stream;

class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual Device device() const = 0;
  // The items (sim) or graph nodes (cuda) recorded.
  virtual std::size_t num_items() const = 0;
  // Enqueues one run of the graph on `stream`, a stream of the graph's device (any of its
  // streams). Throws tandem::Error for a stream of another device or backend, or when the
  // runtime refuses the launch.
  virtual void launch(Stream& stream) = 0;
};

}  // namespace tandem
