// The profiler's event store and its Chrome/Perfetto trace file (writing and reading back).
//
// Each thread that finishes ops appends to its own buffer (its mutex is uncontended except
// while events() copies it). Buffers of exited threads are folded into `orphans`. The registry
// is a deliberately leaked singleton so that thread-local buffers can flush into it at any time,
// static destruction included.
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "profiler_recorder.h"
#include "tandem/accel/stream.h"
#include "tandem/errors.h"
#include "tandem/profiler.h"

namespace tandem::detail::profiling {

std::atomic<bool> g_enabled{false};

namespace {

// An accelerator op's event whose device times are read from its timing events later.
struct DeviceOpEvent {
  profiler::OpEvent event;
  std::shared_ptr<DeviceEvent> start, end;
  std::int64_t epoch_ns = 0;
};

struct Buffer {
  std::mutex mutex;
  std::vector<profiler::OpEvent> events;
  std::vector<DeviceOpEvent> device_events;
};

// Device times of `pending`, waiting for the device if it has not reached the events yet.
profiler::OpEvent resolve(const DeviceOpEvent& pending) {
  profiler::OpEvent event = pending.event;
  auto time_of = [](const std::shared_ptr<DeviceEvent>& e) -> std::int64_t {
    if (!e) return -1;
    try {
      if (!e->query()) e->synchronize();
    } catch (...) {
      // A failed event still has its time; its error is reported by the engine.
    }
    return e->time_ns();
  };
  const std::int64_t start = time_of(pending.start), end = time_of(pending.end);
  if (start >= 0 && end >= start) {
    event.start_ns = start - pending.epoch_ns;
    event.end_ns = end - pending.epoch_ns;
  }
  return event;
}

struct Registry {
  std::mutex mutex;
  std::vector<Buffer*> buffers;
  std::vector<profiler::OpEvent> orphans;
  std::vector<DeviceOpEvent> device_orphans;
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<std::int64_t> epoch_ns{0};
  // Bumped by clear(): a buffer drops events recorded before the last clear.
  std::atomic<std::uint64_t> generation{0};
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked on purpose, see above
  return *r;
}

struct ThreadBuffer {
  Buffer buffer;
  ThreadBuffer() {
    std::lock_guard lock(registry().mutex);
    registry().buffers.push_back(&buffer);
  }
  ~ThreadBuffer() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    std::erase(r.buffers, &buffer);
    std::lock_guard own(buffer.mutex);
    r.orphans.insert(r.orphans.end(), buffer.events.begin(), buffer.events.end());
    r.device_orphans.insert(r.device_orphans.end(), buffer.device_events.begin(),
                            buffer.device_events.end());
  }
};

Buffer& this_thread_buffer() {
  static thread_local ThreadBuffer buffer;
  return buffer.buffer;
}

}  // namespace

void on_enqueue(OpRecord* op) {
  for (std::uint32_t i = 0; i < op->num_slots; ++i) {
    VarState* var = op->slots[i].var;
    const std::uint64_t writer = var->last_writer_profile_id;
    std::uint8_t n = op->num_depends_on.load(std::memory_order_relaxed);
    if (writer != 0 && n < 4) {
      op->depends_on[n] = writer;
      op->num_depends_on.store(n + 1, std::memory_order_relaxed);
    }
    if (op->slots[i].write) var->last_writer_profile_id = op->profile_id;
  }
}

void on_ready(OpRecord* op) {
  op->ready_ns = now_ns();
}

void on_start(OpRecord* op) {
  op->start_ns = now_ns();
}

namespace {
// The op whose body ended last on this thread, and what that body launched (on_body_end).
thread_local const OpRecord* t_counted_op = nullptr;
thread_local LaunchCounts t_counted;
}  // namespace

void on_body_end(const OpRecord* op, LaunchCounts before) {
  t_counted_op = op;
  t_counted = launch_counts() - before;
}

void on_push(OpRecord* op) {
  op->profile_id = registry().next_id.fetch_add(1, std::memory_order_relaxed);
  op->push_ns = now_ns();
  op->ready_ns = op->start_ns = op->push_ns;
  // Reset here rather than when the record is recycled: the recycling then pays no test for
  // the profiler (release_op_record).
  op->num_depends_on.store(0, std::memory_order_relaxed);
}

namespace {

// The op's event with host times; false if it belongs to no trace (pushed before the last
// start()/clear()).
bool make_event(const OpRecord* op, const std::string& lane, bool skipped, bool failed,
                std::int64_t epoch, profiler::OpEvent& event) {
  event.id = op->profile_id;
  event.name = op->props.name;
  event.device = op->device;
  event.queue = op->props.queue;
  event.lane = lane;
  event.push_ns = op->push_ns - epoch;
  event.ready_ns = op->ready_ns - epoch;
  event.start_ns = op->start_ns - epoch;
  event.end_ns = skipped ? event.start_ns : now_ns() - epoch;
  event.skipped = skipped;
  event.failed = failed;
  const auto deps = std::min<std::uint8_t>(op->num_depends_on.load(std::memory_order_relaxed), 4);
  event.depends_on.assign(op->depends_on, op->depends_on + deps);
  if (t_counted_op == op) {
    event.counts = t_counted;
    t_counted_op = nullptr;
  }
  return event.push_ns >= 0;
}

}  // namespace

void on_finish(OpRecord* op, const std::string& lane, bool skipped, bool failed) {
  const std::int64_t epoch = registry().epoch_ns.load(std::memory_order_relaxed);
  profiler::OpEvent event;
  if (!make_event(op, lane, skipped, failed, epoch, event)) return;
  Buffer& buffer = this_thread_buffer();
  std::lock_guard lock(buffer.mutex);
  buffer.events.push_back(std::move(event));
}

void on_finish_device(OpRecord* op, const std::string& lane, bool skipped, bool failed) {
  const std::int64_t epoch = registry().epoch_ns.load(std::memory_order_relaxed);
  DeviceOpEvent pending;
  if (!make_event(op, lane, skipped, failed, epoch, pending.event)) return;
  pending.epoch_ns = epoch;
  if (!skipped) {
    pending.start = op->start_event;
    pending.end = op->end_event;
  }
  Buffer& buffer = this_thread_buffer();
  std::lock_guard lock(buffer.mutex);
  buffer.device_events.push_back(std::move(pending));
}

}  // namespace tandem::detail::profiling

namespace tandem::profiler {

using detail::profiling::g_enabled;
using detail::profiling::registry;

void clear() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto* buffer : r.buffers) {
    std::lock_guard own(buffer->mutex);
    buffer->events.clear();
    buffer->device_events.clear();
  }
  r.orphans.clear();
  r.device_orphans.clear();
}

void start() {
  clear();
  registry().epoch_ns.store(detail::profiling::now_ns());
  g_enabled.store(true);
}

void stop() {
  g_enabled.store(false);
}

bool enabled() {
  return g_enabled.load();
}

std::vector<OpEvent> events() {
  auto& r = registry();
  std::vector<OpEvent> all;
  std::vector<detail::profiling::DeviceOpEvent> device;
  {
    std::lock_guard lock(r.mutex);
    all = r.orphans;
    device = r.device_orphans;
    for (auto* buffer : r.buffers) {
      std::lock_guard own(buffer->mutex);
      all.insert(all.end(), buffer->events.begin(), buffer->events.end());
      device.insert(device.end(), buffer->device_events.begin(), buffer->device_events.end());
    }
  }
  // Outside the locks: this may wait for the devices to reach the timing events.
  for (const auto& pending : device) all.push_back(detail::profiling::resolve(pending));
  std::sort(all.begin(), all.end(), [](const OpEvent& a, const OpEvent& b) { return a.id < b.id; });
  return all;
}

namespace {

// Trace process ids: one "process" per device, so each device's lanes are grouped: 1 for the
// cpu, 100 * kind + id for an accelerator (gpu(i) 100 + i, sim(i) 200 + i).
int process_id(Device device) {
  if (device.kind == DeviceKind::cpu) return 1;
  return 100 * static_cast<int>(device.kind) + device.id;
}

double to_us(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

}  // namespace

void dump(const std::string& path) {
  const std::vector<OpEvent> all = events();
  using nlohmann::json;
  json trace_events = json::array();
  // Lanes numbered per device, in order of first appearance.
  std::map<std::pair<int, std::string>, int> lane_ids;
  std::map<std::uint64_t, const OpEvent*> by_id;
  std::set<int> named_processes;
  for (const OpEvent& e : all) {
    by_id[e.id] = &e;
    const int pid = process_id(e.device);
    if (named_processes.insert(pid).second) {
      trace_events.push_back({{"ph", "M"},
                              {"name", "process_name"},
                              {"pid", pid},
                              {"args", {{"name", to_string(e.device)}}}});
    }
    auto [it, inserted] =
        lane_ids.try_emplace({pid, e.lane}, static_cast<int>(lane_ids.size()) + 1);
    if (inserted) {
      trace_events.push_back({{"ph", "M"},
                              {"name", "thread_name"},
                              {"pid", pid},
                              {"tid", it->second},
                              {"args", {{"name", e.lane}}}});
    }
  }
  std::uint64_t flow_id = 0;
  for (const OpEvent& e : all) {
    const int pid = process_id(e.device);
    const int tid = lane_ids.at({pid, e.lane});
    trace_events.push_back({{"ph", "X"},
                            {"name", e.name},
                            {"cat", queue_name(e.queue)},
                            {"pid", pid},
                            {"tid", tid},
                            {"ts", to_us(e.start_ns)},
                            {"dur", to_us(e.end_ns - e.start_ns)},
                            {"args",
                             {{"id", e.id},
                              {"device", to_string(e.device)},
                              {"queue", queue_name(e.queue)},
                              {"lane", e.lane},
                              {"push_ns", e.push_ns},
                              {"ready_ns", e.ready_ns},
                              {"start_ns", e.start_ns},
                              {"end_ns", e.end_ns},
                              {"skipped", e.skipped},
                              {"failed", e.failed},
                              {"depends_on", e.depends_on},
                              {"kernels", e.counts.kernels},
                              {"library_calls", e.counts.library_calls},
                              {"allocations", e.counts.allocations}}}});
    // Flow arrows: from the end of each predecessor to the start of this op.
    for (std::uint64_t dep : e.depends_on) {
      auto pred = by_id.find(dep);
      if (pred == by_id.end()) continue;
      const OpEvent& p = *pred->second;
      const int ppid = process_id(p.device);
      ++flow_id;
      trace_events.push_back({{"ph", "s"},
                              {"name", "dependency"},
                              {"cat", "dependency"},
                              {"id", flow_id},
                              {"pid", ppid},
                              {"tid", lane_ids.at({ppid, p.lane})},
                              {"ts", to_us(p.end_ns)}});
      trace_events.push_back({{"ph", "f"},
                              {"bp", "e"},
                              {"name", "dependency"},
                              {"cat", "dependency"},
                              {"id", flow_id},
                              {"pid", pid},
                              {"tid", tid},
                              {"ts", to_us(e.start_ns)}});
    }
  }
  json trace = {{"traceEvents", trace_events},
                {"displayTimeUnit", "ns"},
                {"otherData", {{"format", "tandem-trace-1"}, {"ops", all.size()}}}};
  std::ofstream out(path);
  if (!out) throw Error("tandem: profiler::dump cannot open '" + path + "' for writing");
  out << trace.dump(1) << "\n";
  if (!out) throw Error("tandem: profiler::dump failed while writing '" + path + "'");
}

std::vector<OpEvent> load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("tandem: cannot open trace '" + path + "'");
  nlohmann::json trace;
  try {
    trace = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error("tandem: trace '" + path + "' is not valid JSON: " + e.what());
  }
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    throw Error("tandem: trace '" + path + "' has no traceEvents array");
  }
  std::vector<OpEvent> all;
  try {
    for (const auto& item : trace["traceEvents"]) {
      if (item.value("ph", "") != "X" || !item.contains("args")) continue;
      const auto& args = item["args"];
      OpEvent e;
      e.id = args.at("id").get<std::uint64_t>();
      e.name = item.at("name").get<std::string>();
      e.lane = args.at("lane").get<std::string>();
      const std::string device = args.at("device").get<std::string>();
      // A kind this process has no backend for is an error, never read as another kind.
      e.device = parse_device(device);
      const std::string queue = args.at("queue").get<std::string>();
      for (Queue q :
           {Queue::compute, Queue::copy_h2d, Queue::copy_d2h, Queue::copy_d2d, Queue::comm}) {
        if (queue == queue_name(q)) e.queue = q;
      }
      e.push_ns = args.at("push_ns").get<std::int64_t>();
      e.ready_ns = args.at("ready_ns").get<std::int64_t>();
      e.start_ns = args.at("start_ns").get<std::int64_t>();
      e.end_ns = args.at("end_ns").get<std::int64_t>();
      e.skipped = args.value("skipped", false);
      e.failed = args.value("failed", false);
      e.depends_on = args.value("depends_on", std::vector<std::uint64_t>{});
      // Traces written before the counters existed read as zero.
      e.counts.kernels = args.value("kernels", std::uint32_t{0});
      e.counts.library_calls = args.value("library_calls", std::uint32_t{0});
      e.counts.allocations = args.value("allocations", std::uint32_t{0});
      all.push_back(std::move(e));
    }
  } catch (const std::exception& e) {
    throw Error("tandem: trace '" + path + "' has a malformed op event: " + e.what());
  }
  return all;
}

}  // namespace tandem::profiler
