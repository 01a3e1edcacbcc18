// The order in which a pipeline pushes the forward and backward passes of its stages over the
// micro-batches of one batch (GPipe, or one-forward-one-backward).
//
//   std::vector<nn::PipelineTask> order =
//       nn::pipeline_order(nn::PipelineSchedule::gpipe, /*stages=*/2, /*micro_batches=*/4);
//   // forward(0,0) forward(0,1) forward(1,0) ... backward(1,3) backward(0,3) ...
//
// Why the order is the whole schedule: every op returns at once, so one thread pushes a whole
// batch's tasks long before the devices finish them, and each device runs its own tasks in
// this order (nn::Pipeline chains the tasks of a stage so that its device launches them in push
// order). Stage 0's forward of micro-batch k + 1 is pushed right after its forward of
// micro-batch k, and stage 1's forward of micro-batch k waits only for that one: the devices
// overlap without any thread per stage.
//
// Each stage's own sequence:
//   gpipe:    every forward (micro-batch 0, 1, ..., m-1), then every backward (m-1, ..., 0).
//             Simple; keeps the activations of all m micro-batches alive until the backward.
//   one_forward_one_backward (1F1B, PipeDream-flush): stage s runs min(S-1-s, m) forwards first,
//             then alternates one forward and one backward, then the remaining backwards. The
//             same bubble as GPipe, but stage s holds at most S-s micro-batches' activations.
// The global order interleaves the stages by the start time each task would have if a
// forward took one unit and a backward two (ties: the lower stage first), so every task comes
// after the tasks it depends on: forward (s, k) after forward (s-1, k), backward (s, k) after
// backward (s+1, k) and after forward (s, k).
#pragma once

#include <string>
#include <vector>

namespace tandem::nn {

enum class PipelineSchedule { gpipe, one_forward_one_backward };

// "gpipe" or "1f1b".
const char* schedule_name(PipelineSchedule schedule);

struct PipelineTask {
  enum class Pass { forward, backward };
  Pass pass = Pass::forward;
  int stage = 0;
  int micro_batch = 0;

  bool operator==(const PipelineTask&) const = default;
  // "F(stage 0, micro-batch 3)" / "B(...)" for messages and tests.
  std::string to_string() const;
};

// The push order of one batch: 2 * stages * micro_batches tasks. Throws tandem::Error when
// stages or micro_batches is < 1.
std::vector<PipelineTask> pipeline_order(PipelineSchedule schedule, int stages, int micro_batches);

// The sequence of stage `stage` alone, as pipeline_order interleaves it.
std::vector<PipelineTask> stage_order(PipelineSchedule schedule, int stage, int stages,
                                      int micro_batches);

}  // namespace tandem::nn
