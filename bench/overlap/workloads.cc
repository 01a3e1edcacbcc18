#include "workloads.h"

#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

#include "lane_overlap.h"

namespace tandem::bench {

namespace {

namespace nd = tandem::nd;

double timed(const std::function<void()>& body) {
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  body();
  nd::waitall();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The overlapped run, profiled; the best of `repeats` by wall time.
struct Overlapped {
  double seconds = 0;
  LaneOverlap lanes;
};

Overlapped profiled(const std::function<void()>& body, int repeats) {
  Overlapped best;
  for (int i = 0; i < repeats; ++i) {
    nd::waitall();
    profiler::start();
    const double seconds = timed(body);
    profiler::stop();
    const LaneOverlap lanes = lane_overlap(profiler::events());
    if (i == 0 || seconds < best.seconds) best = {seconds, lanes};
  }
  profiler::clear();
  return best;
}

double best_of(const std::function<void()>& body, int repeats) {
  double best = 0;
  for (int i = 0; i < repeats; ++i) {
    const double seconds = timed(body);
    best = i == 0 ? seconds : std::min(best, seconds);
  }
  return best;
}

nlohmann::json record(const char* workload, Device device, double sequential,
                      const Overlapped& overlapped) {
  std::printf(
      "%-28s %-7s one after another %.4f s, overlapped %.4f s, efficiency %.3f (%zu lanes)\n",
      workload, to_string(device).c_str(), sequential, overlapped.seconds,
      overlapped.lanes.efficiency, overlapped.lanes.lanes.size());
  return {{"workload", workload},
          {"device", to_string(device)},
          {"sequential_s", sequential},
          {"overlapped_s", overlapped.seconds},
          {"overlap_efficiency", overlapped.lanes.efficiency},
          {"lane_busy_sum_s", overlapped.lanes.busy_sum_s},
          {"lane_busy_max_s", overlapped.lanes.busy_max_s},
          {"lanes", overlapped.lanes.lanes}};
}

std::vector<nd::NDArray> run(const nd::NDArray& x) {
  std::vector<nd::NDArray> products;
  for (int i = 0; i < 10; ++i) products.push_back(nd::dot(x, x));
  return products;
}

int repeats(bool quick) {
  return quick ? 2 : 5;
}

}  // namespace

void run_cpu_and_accelerator(Device device, bool quick, Records& records) {
  const bool cuda = device.kind == DeviceKind::cuda;
  const std::int64_t n_cpu = 640, n_accel = cuda ? 6000 : 256;
  const nd::NDArray x_cpu = nd::random::uniform({n_cpu, n_cpu});
  const nd::NDArray x_accel = nd::random::uniform({n_accel, n_accel}, device);
  timed([&] {
    run(x_cpu);
    run(x_accel);
  });
  const double on_cpu = best_of([&] { run(x_cpu); }, repeats(quick));
  const double on_accel = best_of([&] { run(x_accel); }, repeats(quick));
  const Overlapped both = profiled(
      [&] {
        run(x_cpu);
        run(x_accel);
      },
      repeats(quick));
  records.push_back(record("cpu_and_accelerator", device, on_cpu + on_accel, both));
  records.back()["cpu_s"] = on_cpu;
  records.back()["accelerator_s"] = on_accel;
  const double ratio = both.seconds / std::max(on_cpu, on_accel);
  records.push_back(
      target_record("CPU ‖ " + to_string(device) + " in parallel: total / the longer part",
                    "<= 1.05", ratio, 1.05, true));
}

void run_compute_and_copy(Device device, bool quick, Records& records) {
  const std::int64_t n = device.kind == DeviceKind::cuda ? 6000 : 256;
  const nd::NDArray x = nd::random::uniform({n, n}, device);
  const auto copy_to_cpu = [](const std::vector<nd::NDArray>& arrays) {
    for (const nd::NDArray& a : arrays) a.copyto(cpu());
  };
  timed([&] { copy_to_cpu(run(x)); });
  double sequential = 0;
  for (int i = 0; i < repeats(quick); ++i) {
    std::vector<nd::NDArray> y;
    const double compute = timed([&] { y = run(x); });
    const double copy = timed([&] { copy_to_cpu(y); });
    sequential = i == 0 ? compute + copy : std::min(sequential, compute + copy);
  }
  const Overlapped both = profiled([&] { copy_to_cpu(run(x)); }, repeats(quick));
  records.push_back(record("run_and_copy", device, sequential, both));
}

void run_pipeline(Device device, bool quick, Records& records) {
  // Per chunk on sim (bus 0.25 GB/s, 2 GFLOP/s): H2D of 256 KiB ~1.05 ms, dot(w, chunk) with w
  // 16x16 over 4096 columns = 2.1 MFLOP ~1.05 ms, D2H ~1.05 ms: equal work per lane.
  const bool cuda = device.kind == DeviceKind::cuda;
  const int chunks = quick ? 48 : 96;
  const std::int64_t rows = 16, columns = cuda ? 1 << 20 : 4096;
  std::vector<nd::NDArray> host;
  for (int i = 0; i < chunks; ++i) host.push_back(nd::random::uniform({rows, columns}));
  const nd::NDArray w = nd::random::uniform({rows, rows}, device);
  nd::waitall();
  const auto stage_in = [&] {
    std::vector<nd::NDArray> on_device;
    for (const nd::NDArray& h : host) on_device.push_back(h.copyto(device));
    return on_device;
  };
  const auto compute = [&](const std::vector<nd::NDArray>& in) {
    std::vector<nd::NDArray> out;
    for (const nd::NDArray& x : in) out.push_back(nd::dot(w, x));
    return out;
  };
  const auto stage_out = [](const std::vector<nd::NDArray>& out) {
    for (const nd::NDArray& y : out) y.copyto(cpu());
  };
  timed([&] { stage_out(compute(stage_in())); });
  double sequential = 0;
  for (int i = 0; i < repeats(quick); ++i) {
    std::vector<nd::NDArray> in, out;
    const double total = timed([&] { in = stage_in(); }) + timed([&] { out = compute(in); }) +
                         timed([&] { stage_out(out); });
    sequential = i == 0 ? total : std::min(sequential, total);
  }
  // Chunk by chunk: chunk i's compute waits for its own copy only, so copies of later chunks
  // and results of earlier ones move while it runs.
  const Overlapped overlapped = profiled(
      [&] {
        for (const nd::NDArray& h : host) nd::dot(w, h.copyto(device)).copyto(cpu());
      },
      repeats(quick));
  records.push_back(record("h2d_compute_d2h_pipeline", device, sequential, overlapped));
  records.back()["chunks"] = chunks;
  records.push_back(target_record("pipeline overlap efficiency on " + to_string(device), ">= 0.95",
                                  overlapped.lanes.efficiency, 0.95, false));
}

namespace {

// `ops` small ops on two 1x16 arrays of `device`: a += 1, then b += a, alternately, so every op
// depends on the one before it and consecutive ops may land on different compute streams.
// Returns the time from the first push to the end of waitall, and b's first value.
std::pair<double, double> small_op_chain(Engine& engine, Device device, int ops) {
  nd::EngineScope scope(engine);
  nd::NDArray a = nd::zeros({1, 16}, device), b = nd::zeros({1, 16}, device);
  nd::waitall();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < ops / 2; ++i) {
    a += 1.0;
    b += a;
  }
  nd::waitall();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {seconds, b.to_vector<double>().front()};
}

}  // namespace

void run_small_ops(Device device, bool quick, Records& records) {
  const int ops = quick ? 2000 : 10000;
  EngineConfig events_config = EngineConfig::from_env();
  EngineConfig sync_config = events_config;
  sync_config.accel.synchronize_each_op = true;
  const auto events_engine = Engine::create(events_config);
  const auto sync_engine = Engine::create(sync_config);
  small_op_chain(*events_engine, device, ops / 10);  // warm-up: pools, streams
  small_op_chain(*sync_engine, device, ops / 10);
  double event_based = 0, sync_per_op = 0;
  for (int i = 0; i < repeats(quick); ++i) {
    const auto [with_events, sum_events] = small_op_chain(*events_engine, device, ops);
    const auto [with_sync, sum_sync] = small_op_chain(*sync_engine, device, ops);
    if (sum_events != sum_sync) {
      throw Error("small_ops_events_vs_sync: the two modes disagree (" +
                  std::to_string(sum_events) + " vs " + std::to_string(sum_sync) + ")");
    }
    event_based = i == 0 ? with_events : std::min(event_based, with_events);
    sync_per_op = i == 0 ? with_sync : std::min(sync_per_op, with_sync);
  }
  std::printf(
      "%-28s %-7s %d ops: event-based %.4f s (%.0f ops/s), sync per op %.4f s (%.0f "
      "ops/s), %.2fx\n",
      "small_ops_events_vs_sync", to_string(device).c_str(), ops, event_based, ops / event_based,
      sync_per_op, ops / sync_per_op, sync_per_op / event_based);
  records.push_back({{"workload", "small_ops_events_vs_sync"},
                     {"device", to_string(device)},
                     {"ops", ops},
                     {"event_based_s", event_based},
                     {"sync_per_op_s", sync_per_op},
                     {"speedup", sync_per_op / event_based}});
}

}  // namespace tandem::bench
