// pipeline_order: each stage's sequence, merged by the start times of a unit-time model.
#include "tandem/nn/pipeline_schedule.h"

#include <algorithm>
#include <cstddef>

#include "tandem/errors.h"

namespace tandem::nn {

namespace {

using Pass = PipelineTask::Pass;

// The model that orders the stages' tasks against each other: a backward costs about twice a
// forward (it computes the gradients of both the input and the weights).
constexpr long kForwardUnits = 1;
constexpr long kBackwardUnits = 2;

void check_counts(int stages, int micro_batches) {
  if (stages < 1 || micro_batches < 1) {
    throw Error("tandem: pipeline_order: needs at least one stage and one micro-batch, got " +
                std::to_string(stages) + " stage(s) and " + std::to_string(micro_batches) +
                " micro-batch(es)");
  }
}

struct TimedTask {
  PipelineTask task;
  long start = 0;
};

}  // namespace

const char* schedule_name(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b";
}

std::string PipelineTask::to_string() const {
  return std::string(pass == Pass::forward ? "F" : "B") + "(stage " + std::to_string(stage) +
         ", micro-batch " + std::to_string(micro_batch) + ")";
}

std::vector<PipelineTask> stage_order(PipelineSchedule schedule, int stage, int stages,
                                      int micro_batches) {
  check_counts(stages, micro_batches);
  if (stage < 0 || stage >= stages) {
    throw Error("tandem: stage_order: stage " + std::to_string(stage) + " of a pipeline of " +
                std::to_string(stages) + " stage(s)");
  }
  std::vector<PipelineTask> order;
  order.reserve(2 * static_cast<std::size_t>(micro_batches));
  auto forward = [&](int k) { order.push_back({Pass::forward, stage, k}); };
  auto backward = [&](int k) { order.push_back({Pass::backward, stage, k}); };
  if (schedule == PipelineSchedule::gpipe) {
    for (int k = 0; k < micro_batches; ++k) forward(k);
    for (int k = micro_batches - 1; k >= 0; --k) backward(k);
    return order;
  }
  // 1F1B: enough forwards in flight to fill the stages after this one, then one of each.
  const int warmup = std::min(stages - 1 - stage, micro_batches);
  for (int k = 0; k < warmup; ++k) forward(k);
  for (int k = 0; k < micro_batches - warmup; ++k) {
    forward(warmup + k);
    backward(k);
  }
  for (int k = micro_batches - warmup; k < micro_batches; ++k) backward(k);
  return order;
}

std::vector<PipelineTask> pipeline_order(PipelineSchedule schedule, int stages, int micro_batches) {
  check_counts(stages, micro_batches);
  const auto count = static_cast<std::size_t>(micro_batches);
  std::vector<std::vector<PipelineTask>> sequences;
  for (int s = 0; s < stages; ++s) {
    sequences.push_back(stage_order(schedule, s, stages, micro_batches));
  }
  // When each task of each stage would end (-1: not placed yet).
  std::vector<std::vector<long>> forward_end(stages, std::vector<long>(count, -1));
  std::vector<std::vector<long>> backward_end(stages, std::vector<long>(count, -1));
  std::vector<std::size_t> next(stages, 0);
  std::vector<long> stage_free(stages, 0);
  std::vector<TimedTask> placed;
  placed.reserve(2 * count * static_cast<std::size_t>(stages));

  // The end of the task on another stage that `task` waits for; -1 when it is not placed yet,
  // 0 when it waits for none.
  auto dependency_end = [&](const PipelineTask& task) -> long {
    const auto k = static_cast<std::size_t>(task.micro_batch);
    if (task.pass == Pass::forward) return task.stage == 0 ? 0 : forward_end[task.stage - 1][k];
    return task.stage == stages - 1 ? 0 : backward_end[task.stage + 1][k];
  };
  while (placed.size() < placed.capacity()) {
    bool progressed = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < sequences[s].size()) {
        const PipelineTask& task = sequences[s][next[s]];
        const long ready = dependency_end(task);
        if (ready < 0) break;
        const long start = std::max(stage_free[s], ready);
        const bool is_forward = task.pass == Pass::forward;
        const long end = start + (is_forward ? kForwardUnits : kBackwardUnits);
        (is_forward ? forward_end : backward_end)[s][static_cast<std::size_t>(task.micro_batch)] =
            end;
        stage_free[s] = end;
        placed.push_back({task, start});
        ++next[s];
        progressed = true;
      }
    }
    if (!progressed) {
      // The sequences above never wait on each other in a cycle; this guards a future one.
      throw Error(std::string("tandem: pipeline_order: the ") + schedule_name(schedule) +
                  " sequences of the stages wait on each other (a schedule bug)");
    }
  }
  std::stable_sort(placed.begin(), placed.end(), [](const TimedTask& a, const TimedTask& b) {
    return a.start != b.start ? a.start < b.start : a.task.stage < b.task.stage;
  });
  std::vector<PipelineTask> order;
  order.reserve(placed.size());
  for (const TimedTask& timed : placed) order.push_back(timed.task);
  return order;
}

}  // namespace tandem::nn
