// pipeline_parallel: the seed's pipeline-parallel program (PyTorch's model-parallel tutorial):
// one network trained on one device, split over two devices (model parallel), and split with
// each batch cut into micro-batches of a given split size so that the two stages work at the
// same time (pipeline parallel, nn::Pipeline::forward_backward), for a sweep of split sizes.
//
//   build/examples/pipeline_parallel/pipeline_parallel [--quick] [--schedule gpipe|1f1b]
//       [--devices A,B] [--svg PATH] [--timeline PATH] [--profile-split N] [--no-sweep]
//
// Prints seconds per training step for each, the sweep as a table, and how much the two devices
// computed at the same time in one step of the best split (from the profiler). --svg writes the
// sweep as a picture (docs/pictures/pipeline_split_sweep.svg), --timeline the profiler's
// timeline of one pipeline step at the best split (docs/pictures/pipeline_step_timeline.svg), or
// at --profile-split N; --no-sweep skips the sweep.
// The devices default to sim(0) and sim(1), with the sim model of two_device_sim_model.h unless
// TANDEM_SIM_* say otherwise; --devices cuda(0),cuda(1) runs on two GPUs. Without two devices it
// prints SKIPPED and exits 0.
#include <tandem/profiler.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "stage_overlap.h"
#include "step_timing.h"
#include "sweep_svg.h"
#include "two_device_sim_model.h"
#include "two_devices.h"

namespace ex = tandem::examples;
namespace nd = tandem::nd;
namespace nn = tandem::nn;

namespace {

struct Flags {
  bool quick = false;
  nn::PipelineSchedule schedule = nn::PipelineSchedule::one_forward_one_backward;
  std::vector<tandem::Device> devices{tandem::sim(0), tandem::sim(1)};
  std::string svg_path, timeline_path;
  std::int64_t profiled_split = 0;  // 0: the best of the sweep
  bool sweep = true;
};

bool parse(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      flags.quick = true;
    } else if (arg == "--schedule" && has_value) {
      const std::string name = argv[++i];
      if (name != "gpipe" && name != "1f1b") return false;
      flags.schedule = name == "gpipe" ? nn::PipelineSchedule::gpipe
                                       : nn::PipelineSchedule::one_forward_one_backward;
    } else if (arg == "--devices" && has_value) {
      if (!ex::parse_device_pair(argv[++i], flags.devices)) return false;
    } else if (arg == "--svg" && has_value) {
      flags.svg_path = argv[++i];
    } else if (arg == "--timeline" && has_value) {
      flags.timeline_path = argv[++i];
    } else if (arg == "--profile-split" && has_value) {
      flags.profiled_split = std::stoll(argv[++i]);
    } else if (arg == "--no-sweep") {
      flags.sweep = false;
    } else {
      return false;
    }
  }
  return true;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) {
    std::fprintf(stderr, "pipeline_parallel: cannot write %s\n", path.c_str());
    return false;
  }
  std::printf("wrote %s\n", path.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  try {
    if (!parse(argc, argv, flags)) {
      std::fprintf(stderr,
                   "usage: pipeline_parallel [--quick] [--schedule gpipe|1f1b] [--devices A,B] "
                   "[--svg PATH] [--timeline PATH] [--profile-split N] [--no-sweep]\n");
      return 2;
    }
    ex::use_two_device_sim_model();
    const tandem::Device first = flags.devices[0], second = flags.devices[1];
    if (!ex::both_devices_present(first, second)) return 0;
    ex::TwoStageShape shape;
    std::vector<std::int64_t> splits{1, 2, 3, 5, 8, 12, 20, 30, 60, 120};
    ex::StepTimingOptions timing{.steps = 3, .rounds = 3, .schedule = flags.schedule};
    if (flags.quick) {
      shape.width = shape.features = 256;
      shape.layers_per_stage = 2;
      splits = {4, 12, 40, 120};
      timing.steps = 1;
      timing.rounds = 1;
    }
    const tandem::AcceleratorConfig model = tandem::AcceleratorConfig::from_env();
    std::printf(
        "%s + %s, batch %lld, %d + %d dense layers of %lld units, %s schedule; sim model "
        "%g GFLOP/s, memory %g GB/s, bus %g GB/s, %d compute stream(s)\n",
        tandem::to_string(first).c_str(), tandem::to_string(second).c_str(),
        static_cast<long long>(shape.batch), shape.layers_per_stage, shape.layers_per_stage + 1,
        static_cast<long long>(shape.width), nn::schedule_name(flags.schedule), model.sim_gflops,
        model.sim_memory_gbps, model.sim_bus_gbps, model.compute_streams);

    const ex::StepTimer timer(shape, first, second);
    const double one_device = timer.seconds_per_step(ex::Placement::one_device, timing);
    const double model_parallel = timer.seconds_per_step(ex::Placement::model_parallel, timing);
    std::printf("%-16s %8.4f s/step\n", "one device", one_device);
    std::printf("%-16s %8.4f s/step (%.2fx one device)\n", "model parallel", model_parallel,
                one_device / model_parallel);

    std::printf("\n%10s %14s %10s %12s\n", "split size", "micro-batches", "s/step", "vs one dev.");
    std::vector<ex::SweepPoint> sweep;
    for (const std::int64_t split : splits) {
      if (split > shape.batch || !flags.sweep) continue;
      timing.split_size = split;
      const double seconds = timer.seconds_per_step(ex::Placement::pipeline, timing);
      sweep.push_back({split, seconds});
      std::printf("%10lld %14lld %10.4f %11.2fx\n", static_cast<long long>(split),
                  static_cast<long long>((shape.batch + split - 1) / split), seconds,
                  one_device / seconds);
    }
    ex::SweepPoint best{flags.profiled_split, 0};
    if (!sweep.empty()) {
      best = *std::min_element(
          sweep.begin(), sweep.end(),
          [](const ex::SweepPoint& a, const ex::SweepPoint& b) { return a.seconds < b.seconds; });
      std::printf("best split %lld: %.4f s/step, %.2fx one device\n",
                  static_cast<long long>(best.split_size), best.seconds, one_device / best.seconds);
    }
    if (flags.profiled_split > 0) best.split_size = flags.profiled_split;

    // One step of the best split under the profiler: do the stages really overlap?
    if (best.split_size > 0) {
      nn::Pipeline net = timer.make_network(ex::Placement::pipeline);
      nn::Trainer trainer(net.collect_params(), nn::SGD(0.01));
      timing.split_size = best.split_size;
      timer.step(net, trainer, ex::Placement::pipeline, timing);  // warm-up
      nd::waitall();
      tandem::profiler::start();
      timer.step(net, trainer, ex::Placement::pipeline, timing);
      nd::waitall();
      tandem::profiler::stop();
      const auto events = tandem::profiler::events();
      const ex::StageOverlap overlap = ex::stage_overlap(events, first, second);
      std::printf(
          "one step at split %lld: %s computed %.3f s, %s %.3f s, both at once %.3f s (%.0f%% of "
          "the shorter), step %.3f s\n",
          static_cast<long long>(best.split_size), tandem::to_string(first).c_str(),
          overlap.first_s, tandem::to_string(second).c_str(), overlap.second_s, overlap.both_s,
          100.0 * overlap.both_s / std::max(1e-9, std::min(overlap.first_s, overlap.second_s)),
          overlap.wall_s);
      if (!flags.timeline_path.empty() &&
          !write_file(flags.timeline_path, tandem::profiler::timeline_svg(events, 1400))) {
        return 1;
      }
    }
    if (!flags.svg_path.empty() && !sweep.empty()) {
      char subtitle[256];
      std::snprintf(subtitle, sizeof subtitle,
                    "%s + %s, batch %lld, %s; sim %g GFLOP/s, memory %g GB/s, %d stream",
                    tandem::to_string(first).c_str(), tandem::to_string(second).c_str(),
                    static_cast<long long>(shape.batch), nn::schedule_name(flags.schedule),
                    model.sim_gflops, model.sim_memory_gbps, model.compute_streams);
      if (!write_file(flags.svg_path, ex::sweep_svg(sweep, one_device, model_parallel, subtitle))) {
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeline_parallel: %s\n", e.what());
    return 1;
  }
  return 0;
}
