// Pipeline: stages on devices; the micro-batch schedule pushed stage by stage.
#include "tandem/nn/pipeline.h"

#include <algorithm>
#include <string>

#include "core/backend.h"
#include "core/transfer.h"
#include "tandem/errors.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/creation.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/network.h"

namespace tandem::nn {

nd::NDArray softmax_cross_entropy_loss(const nd::NDArray& output, const nd::NDArray& label) {
  return nd::softmax_cross_entropy(output, label).sum();
}

Pipeline& Pipeline::add_stage(std::shared_ptr<Block> block, Device device) {
  const std::string stage = "stage " + std::to_string(devices_.size());
  if (!block) throw Error("tandem: Pipeline::add_stage: " + stage + " is a null block");
  nd::detail::require_backend(device, ("Pipeline::add_stage (" + stage + ")").c_str());
  if (!devices_.empty()) {
    nd::detail::check_transfer(
        ("Pipeline::add_stage (" + stage + " after a stage on " + to_string(devices_.back()) + ")")
            .c_str(),
        devices_.back(), device);
    nd::detail::check_transfer(("Pipeline::add_stage (gradients from " + stage + " back to " +
                                to_string(devices_.back()) + ")")
                                   .c_str(),
                               device, devices_.back());
  }
  blocks_.push_back(register_child(std::to_string(devices_.size()), std::move(block)));
  devices_.push_back(device);
  return *this;
}

Device Pipeline::stage_device(std::size_t stage) const {
  if (stage >= stages()) {
    throw Error("tandem: Pipeline: no stage " + std::to_string(stage) + " (it has " +
                std::to_string(stages()) + ")");
  }
  return devices_[stage];
}

Block& Pipeline::stage(std::size_t stage) const {
  stage_device(stage);  // checks the index
  return *blocks_[stage];
}

void Pipeline::initialize(const Initializer& init, bool force_reinit) {
  for (std::size_t s = 0; s < stages(); ++s) {
    blocks_[s]->collect_params().initialize(init, {devices_[s]}, force_reinit);
  }
}

nd::NDArray Pipeline::forward(const nd::NDArray& x) {
  if (stages() == 0) throw Error("tandem: Pipeline::forward: the pipeline has no stages");
  nd::NDArray y = x;
  for (std::size_t s = 0; s < stages(); ++s) y = blocks_[s]->forward(y.as_in_context(devices_[s]));
  return y;
}

void Pipeline::check_batch(const nd::NDArray& data, const nd::NDArray& label,
                           const PipelineOptions& options) const {
  const char* op = "tandem: Pipeline::forward_backward: ";
  if (stages() == 0) throw Error(std::string(op) + "the pipeline has no stages (add_stage first)");
  if (!data.defined() || !label.defined() || data.ndim() < 1 || label.ndim() < 1) {
    throw Error(std::string(op) + "needs data and labels with a first (batch) dimension");
  }
  const std::int64_t rows = data.shape()[0];
  if (label.shape()[0] != rows) {
    throw Error(std::string(op) + "the data has " + std::to_string(rows) + " rows (shape " +
                data.shape().to_string() + ") but the labels have " +
                std::to_string(label.shape()[0]) + " (shape " + label.shape().to_string() + ")");
  }
  nd::detail::check_transfer("Pipeline::forward_backward (the data to stage 0)", data.device(),
                             devices_.front());
  nd::detail::check_transfer("Pipeline::forward_backward (the labels to the last stage)",
                             label.device(), devices_.back());
  if (options.split_size < 1) {
    throw Error(std::string(op) + "split_size must be >= 1 (rows per micro-batch), got " +
                std::to_string(options.split_size));
  }
  if (options.split_size > rows) {
    throw Error(std::string(op) + "split_size " + std::to_string(options.split_size) +
                " is larger than the batch (" + std::to_string(rows) +
                " rows); use at most the batch size (one micro-batch: no pipelining)");
  }
}

namespace {

// What one micro-batch leaves between its tasks: per stage, the stage's input (with a
// gradient of its own, except stage 0's) and its output (the loss, for the last stage).
struct MicroBatch {
  std::vector<nd::NDArray> inputs;
  std::vector<nd::NDArray> outputs;
};

// Makes every op that reads `entry` (a fresh array, written next by the op that fills it) start
// after the ops that wrote `after`: a no-op engine op that reads `after` and writes `entry`.
//
// Why: a device launches its ready ops in the order they became ready, not in push order. The
// first op of micro-batch k + 1 is ready at once (its input exists), while the ops of
// micro-batch k become ready one by one as their predecessors launch; left alone, the device
// would run the micro-batches breadth first (layer 1 of all of them, then layer 2, ...), so
// micro-batch 0 would leave stage 0 only when all of them do and the stages could not overlap.
// Chaining each task's entry to the end of the stage's previous task makes each device launch
// its tasks in the schedule's order. The op does no device work; the real fill of `entry`
// comes after it (a write after a write), so an error of that fill still reaches the readers.
void order_after(const nd::NDArray& entry, const std::vector<nd::NDArray>& after) {
  std::vector<Var> reads;
  for (const nd::NDArray& array : after) {
    if (array.defined()) reads.push_back(array.var());
  }
  if (reads.empty()) return;
  entry.engine().push([] {}, entry.device(), reads, {entry.var()}, {.name = "pipeline_order"});
}

// The arrays the backward of a stage writes last: its parameters' gradients on its device.
std::vector<nd::NDArray> parameter_gradients(const Block& stage, Device device) {
  std::vector<nd::NDArray> gradients;
  for (const ParameterDict::Entry& entry : stage.collect_params()) {
    if (entry.second->grad_req() != GradReq::null && entry.second->initialized()) {
      gradients.push_back(entry.second->grad(device));
    }
  }
  return gradients;
}

}  // namespace

nd::NDArray Pipeline::forward_backward(const nd::NDArray& data, const nd::NDArray& label,
                                       const LossFunction& loss, const PipelineOptions& options) {
  check_batch(data, label, options);
  if (!loss) throw Error("tandem: Pipeline::forward_backward: a null loss function");
  if (autograd::is_recording()) {
    throw Error(
        "tandem: Pipeline::forward_backward: called inside autograd::record(); it records the "
        "forwards and pushes the backwards itself, call it outside the record scope");
  }
  const std::int64_t rows = data.shape()[0];
  const auto micro_batches = static_cast<int>((rows + options.split_size - 1) / options.split_size);
  const int stage_count = static_cast<int>(stages());
  const Device last_device = devices_.back();

  // Gradients summed over the micro-batches, from zero.
  const ParameterDict params = collect_params();
  for (const ParameterDict::Entry& entry : params) {
    if (entry.second->grad_req() == GradReq::write) entry.second->set_grad_req(GradReq::add);
  }
  params.zero_grad();

  std::vector<MicroBatch> states(static_cast<std::size_t>(micro_batches));
  for (MicroBatch& state : states) {
    state.inputs.resize(stages());
    state.outputs.resize(stages());
  }
  // Per stage, what its latest task wrote last (see order_after).
  std::vector<std::vector<nd::NDArray>> task_ends(stages());
  nd::NDArray total_loss;

  for (const PipelineTask& task : pipeline_order(options.schedule, stage_count, micro_batches)) {
    MicroBatch& state = states[static_cast<std::size_t>(task.micro_batch)];
    const auto s = static_cast<std::size_t>(task.stage);
    const Device device = devices_[s];
    const bool last = s + 1 == stages();
    const std::int64_t begin = task.micro_batch * options.split_size;
    const std::int64_t end = std::min(rows, begin + options.split_size);
    if (task.pass == PipelineTask::Pass::forward) {
      // The stage's input, a fresh array on its device: the rows of the micro-batch, or the
      // previous stage's output. For s > 0 it is the cut between the stages: a leaf of its own,
      // so that this stage's backward stops here and leaves its gradient for the previous one.
      const nd::NDArray source = s == 0 ? data.slice(begin, end) : state.outputs[s - 1].detach();
      nd::NDArray input = nd::empty(source.shape(), source.dtype(), device);
      order_after(input, task_ends[s]);
      source.copyto(input);
      if (s > 0) input.attach_grad();
      nd::NDArray output;
      {
        auto recording = autograd::record(/*train_mode=*/true);
        output = blocks_[s]->forward(input);
        if (last) {
          output = loss(output, label.slice(begin, end).as_in_context(last_device));
          if (output.size() != 1) output = output.sum();
        }
      }
      const nd::NDArray loss_value = output.detach();
      if (last) total_loss = total_loss.defined() ? total_loss + loss_value : loss_value;
      task_ends[s] = {loss_value};
      state.inputs[s] = std::move(input);
      state.outputs[s] = std::move(output);
      continue;
    }
    // Backward: from 1 on the last stage's loss, else from the gradient of the next stage's
    // input, brought back to this stage's device.
    const nd::NDArray& head = state.outputs[s];
    nd::NDArray head_grad = nd::empty(head.shape(), head.dtype(), device);
    order_after(head_grad, task_ends[s]);
    if (last) {
      head_grad.assign(1.0);
    } else {
      state.inputs[s + 1].grad().copyto(head_grad);
      state.inputs[s + 1] = nd::NDArray();  // its gradient has been read (the read is queued)
    }
    autograd::backward(head, head_grad);
    task_ends[s] = parameter_gradients(*blocks_[s], device);
    if (s > 0) task_ends[s].push_back(state.inputs[s].grad());
    state.outputs[s] = nd::NDArray();  // backward released the graph; drop the handle
    if (s == 0) state.inputs[0] = nd::NDArray();
  }
  return total_loss;
}

}  // namespace tandem::nn
