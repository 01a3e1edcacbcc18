// The profiler: what ran where and when, and how much of it overlapped.
//
//   tandem::profiler::start();
//   ... push ops ...
//   tandem::Engine::get().wait_all();
//   tandem::profiler::stop();
//   tandem::profiler::dump("trace.json");       // open in ui.perfetto.dev or chrome://tracing
//   std::cout << tandem::profiler::summary();   // per-op table and overlap figures
//
// Or set TANDEM_PROFILE=trace.json: the process-wide engine profiles from its creation and
// writes the trace when it is destroyed (at exit). `tandem-trace summary trace.json` and
// `tandem-trace timeline trace.json out.svg` read the file back (docs/measuring-overlap.md).
//
// Off by default; when off, an op pays one relaxed atomic load at each of push, dispatch and
// run. When on, each op records its push, ready, start and end times (steady clock, ns) into a
// buffer of the thread that finished it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/device.h"
#include "tandem/launch_counters.h"
#include "tandem/op_props.h"

namespace tandem::profiler {

// One finished op. Times are nanoseconds on the steady clock, relative to `start()`.
struct OpEvent {
  std::uint64_t id = 0;  // push order among profiled ops, from 1
  std::string name;
  Device device;
  Queue queue = Queue::compute;
  // Where it ran: "cpu worker 0", "cpu priority 0", "inline" (naive engine, waits), or an
  // accelerator stream ("gpu(0) compute 1", "gpu(0) copy_h2d", ...).
  std::string lane;
  std::int64_t push_ns = 0;
  std::int64_t ready_ns = 0;  // every var granted
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  bool skipped = false;  // not run: an input was poisoned
  bool failed = false;
  // Data dependencies, in push order: for each var the op touches, the last op pushed before
  // it that wrote the var (up to 4 edges; flow arrows in the trace).
  std::vector<std::uint64_t> depends_on;
  // What the op's body launched on its device and allocated there: kernels, library calls
  // (cuBLAS, cuDNN, CUB) and device allocations that missed the pools' caches. On cuda what
  // the launch wrappers really launched; on sim what the CUDA kernels would launch. Zero for
  // CPU ops (tandem/launch_counters.h).
  LaunchCounts counts;
};

// Clears what was recorded and starts recording ops pushed from now on.
void start();
// Stops recording (ops already pushed while on are still recorded when they finish).
void stop();
bool enabled();
// Drops every recorded event.
void clear();
// A copy of the events recorded so far, sorted by id.
std::vector<OpEvent> events();
// Writes the events as a Chrome/Perfetto trace JSON; throws tandem::Error if the file cannot
// be written.
void dump(const std::string& path);

// --- analysis (also used by tandem-trace on a trace read back from a file) --------------------

struct OpStats {
  std::string name;
  std::uint64_t count = 0;
  double total_us = 0, mean_us = 0, min_us = 0, max_us = 0;
  // Summed over the op's calls (OpEvent::counts).
  std::uint64_t kernels = 0, library_calls = 0, allocations = 0;
};

// Busy time of each kind of lane on one device and how much they overlapped.
struct DeviceOverlap {
  Device device;
  double wall_us = 0;     // first start to last end of the device's ops
  double compute_us = 0;  // union of the device's compute lanes' busy intervals
  double h2d_us = 0, d2h_us = 0, other_us = 0;                    // copy lanes (other: d2d, comm)
  double compute_h2d_us = 0, compute_d2h_us = 0, h2d_d2h_us = 0;  // pairwise intersections
  double lane_busy_sum_us = 0;  // sum over lanes of each lane's busy time
  double lane_busy_max_us = 0;
  // (sum of lane busy - wall) / (sum of lane busy - max lane busy): 1 when the lanes overlap
  // perfectly, 0 when they ran one after the other; 0 when only one lane was busy.
  double overlap_efficiency = 0;
};

std::vector<OpStats> op_stats(const std::vector<OpEvent>& events);
std::vector<DeviceOverlap> overlap(const std::vector<OpEvent>& events);
// The two tables as text.
std::string summary(const std::vector<OpEvent>& events);
std::string summary();

// The lanes as an SVG picture: one row per lane grouped by device, one box per op coloured by
// queue (hover for name and times), a time axis, and the overlap figures underneath.
std::string timeline_svg(const std::vector<OpEvent>& events, int width_px = 1200);

// Reads a trace written by dump() back into events; throws tandem::Error on a malformed file.
std::vector<OpEvent> load(const std::string& path);

}  // namespace tandem::profiler
