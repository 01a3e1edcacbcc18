// Pipeline and model parallel on two sim devices (issue 14): the network of
// examples/pipeline_parallel/two_stage_model.h trained on one device, split over two (model
// parallel), and split with each batch pipelined in micro-batches for a sweep of split sizes.
// "seconds" is seconds per training step (forward, backward, SGD update): the median of
// `rounds` rounds of `steps` steps pushed back to back (step_timing.h).
//
// The sim model is always two_device_sim_model.h's (docs/benchmarks.md says why), so that the
// figures of two runs compare: when this process's TANDEM_SIM_* / TANDEM_ACCEL_STREAMS say
// otherwise (bench/run.sh multi_device sets the data-parallel model), each of these workloads
// runs in a child process of this program (`--only WORKLOAD`) with the two-device model's
// variables, and its records are merged here. examples/pipeline_parallel honours the variables,
// for trying other models.
#include <tandem/profiler.h>
#include <tandem/tandem.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stage_overlap.h"
#include "step_timing.h"
#include "two_device_sim_model.h"
#include "workloads.h"

namespace tandem::bench {

namespace {

namespace ex = tandem::examples;

bool have_two_sim_devices(const char* workload) {
  if (device_count(DeviceKind::sim) >= 2) return true;
  std::printf("%s: SKIPPED: needs two sim devices (TANDEM_SIM_DEVICES >= 2)\n", workload);
  return false;
}

ex::StepTimingOptions timing_for(const MultiDeviceOptions& options) {
  return options.quick ? ex::StepTimingOptions{.steps = 2, .rounds = 2}
                       : ex::StepTimingOptions{.steps = 3, .rounds = 5};
}

nlohmann::json record(const char* workload, int devices, double seconds,
                      const ex::TwoStageShape& shape, const ex::StepTimingOptions& timing) {
  nlohmann::json r = {{"workload", workload},
                      {"system", "tandem"},
                      {"devices", devices},
                      {"seconds", seconds},
                      {"batch", shape.batch},
                      {"width", shape.width},
                      {"layers", 2 * shape.layers_per_stage + 1},
                      {"steps", timing.steps},
                      {"rounds", timing.rounds}};
  r.update(sim_settings_record());
  return r;
}

// The fraction of the shorter stage's compute time during which both devices computed, in one
// step at `split_size`, from the profiler.
double stages_overlap(const ex::StepTimer& timer, ex::StepTimingOptions timing) {
  nn::Pipeline net = timer.make_network(ex::Placement::pipeline);
  nn::Trainer trainer(net.collect_params(), nn::SGD(0.01));
  timer.step(net, trainer, ex::Placement::pipeline, timing);
  nd::waitall();
  profiler::start();
  timer.step(net, trainer, ex::Placement::pipeline, timing);
  nd::waitall();
  profiler::stop();
  const ex::StageOverlap overlap = ex::stage_overlap(profiler::events(), sim(0), sim(1));
  profiler::clear();
  return overlap.both_s / std::max(1e-9, std::min(overlap.first_s, overlap.second_s));
}

// Unless this process's variables are the two-device sim model already, runs `workload` in a
// child process with them and appends its records (true); false: run it here.
bool ran_in_child_process(const char* workload, const MultiDeviceOptions& options,
                          Records& records) {
  const auto& model = ex::two_device_sim_defaults();
  const bool model_set = std::all_of(model.begin(), model.end(), [](const auto& entry) {
    const char* value = std::getenv(entry.variable);
    return value != nullptr && std::string(value) == entry.value;
  });
  if (model_set) {
    ex::use_two_device_sim_model();
    return false;
  }
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() /
      (std::string("bench_multi_device_") + std::to_string(getpid()) + "_" + workload + ".json");
  std::string command = "env";
  for (const ex::SimModelDefault& entry : ex::two_device_sim_defaults()) {
    command.append(" ").append(entry.variable).append("=").append(entry.value);
  }
  command.append(" '").append(self.string()).append("' --only ").append(workload);
  command.append(" --out '").append(out.string()).append("'");
  if (options.quick) command.append(" --quick");
  std::printf("%s: in its own process, on the two-device sim model: %s\n", workload,
              command.c_str());
  std::fflush(stdout);
  const int status = std::system(command.c_str());
  std::ifstream in(out);
  if (status != 0 || !in) {
    throw Error(std::string("bench_multi_device: the ") + workload +
                " workload's child process failed (status " + std::to_string(status) + ")");
  }
  for (const nlohmann::json& record : nlohmann::json::parse(in)) records.push_back(record);
  in.close();
  std::filesystem::remove(out);
  return true;
}

}  // namespace

void run_pipeline(const MultiDeviceOptions& options, Records& records) {
  if (ran_in_child_process("pipeline", options, records)) return;
  if (!have_two_sim_devices("pipeline")) return;
  const ex::TwoStageShape shape;
  ex::StepTimingOptions timing = timing_for(options);
  const std::vector<std::int64_t> splits =
      options.quick ? std::vector<std::int64_t>{1, 3, 8, 20, 60, 120}
                    : std::vector<std::int64_t>{1, 2, 3, 5, 8, 12, 20, 30, 60, 120};
  const ex::StepTimer timer(shape, sim(0), sim(1));

  const double one_device = timer.seconds_per_step(ex::Placement::one_device, timing);
  nlohmann::json baseline = record("pipeline", 1, one_device, shape, timing);
  baseline["split_size"] = shape.batch;  // the whole batch at once
  records.push_back(baseline);
  std::printf("pipeline: one device %.4f s/step\n", one_device);

  double best_seconds = 0;
  std::int64_t best_split = 0;
  std::vector<double> seconds;
  for (const std::int64_t split : splits) {
    timing.split_size = split;
    seconds.push_back(timer.seconds_per_step(ex::Placement::pipeline, timing));
    nlohmann::json r = record("pipeline", 2, seconds.back(), shape, timing);
    r["split_size"] = split;
    r["micro_batches"] = (shape.batch + split - 1) / split;
    r["schedule"] = nn::schedule_name(timing.schedule);
    records.push_back(r);
    std::printf("pipeline: split %3lld: %.4f s/step (%.2fx one device)\n",
                static_cast<long long>(split), seconds.back(), one_device / seconds.back());
    if (best_split == 0 || seconds.back() < best_seconds) {
      best_seconds = seconds.back();
      best_split = split;
    }
  }
  timing.split_size = best_split;
  const double overlap = stages_overlap(timer, timing);
  std::printf(
      "pipeline: best split %lld; both devices computing during %.0f%% of the shorter "
      "stage's compute time\n",
      static_cast<long long>(best_split), 100 * overlap);
  for (auto& r : records) {
    if (r.value("workload", "") == "pipeline" && r.value("devices", 0) == 2 &&
        r.value("split_size", std::int64_t{0}) == best_split) {
      r["best"] = true;
      r["stages_overlap"] = overlap;
    }
  }
  records.push_back(target_record("pipeline: best split, speed-up over one device", ">= 1.5",
                                  one_device / best_seconds, 1.5, /*at_most=*/false));
  records.push_back(target_record("pipeline: smallest split / best (U shape)", "> 1",
                                  seconds.front() / best_seconds, 1.0001, /*at_most=*/false));
  records.push_back(target_record("pipeline: largest split / best (U shape)", "> 1",
                                  seconds.back() / best_seconds, 1.0001, /*at_most=*/false));
}

void run_model_parallel(const MultiDeviceOptions& options, Records& records) {
  if (ran_in_child_process("model_parallel", options, records)) return;
  if (!have_two_sim_devices("model_parallel")) return;
  const ex::TwoStageShape shape;
  const ex::StepTimingOptions timing = timing_for(options);
  const ex::StepTimer timer(shape, sim(0), sim(1));
  const double one_device = timer.seconds_per_step(ex::Placement::one_device, timing);
  const double split = timer.seconds_per_step(ex::Placement::model_parallel, timing);
  records.push_back(record("model_parallel", 1, one_device, shape, timing));
  records.push_back(record("model_parallel", 2, split, shape, timing));
  std::printf("model_parallel: one device %.4f s/step, two devices %.4f s/step (%.2fx)\n",
              one_device, split, one_device / split);
}

}  // namespace tandem::bench
