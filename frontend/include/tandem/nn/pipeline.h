// Pipeline: a network cut into stages, each stage on its own device (model parallelism), and the
// training step that pipelines micro-batches through them (pipeline parallelism, GPipe / 1F1B).
//
//   nn::Pipeline net;
//   net.add_stage(first_half, tandem::sim(0))      // any Blocks: Sequentials, user blocks
//      .add_stage(second_half, tandem::sim(1));
//   net.initialize(nn::Xavier());                  // each stage's parameters on its device
//   nn::Trainer trainer(net.collect_params(), nn::SGD(0.1));
//
//   // Model parallel: the whole batch through the stages, the activations (and, in backward,
//   // their gradients) crossing devices with copies recorded by autograd.
//   {
//     auto recording = autograd::record();
//     loss = nd::softmax_cross_entropy(net(x), y.as_in_context(tandem::sim(1))).sum();
//   }
//   loss.backward();
//   trainer.step(batch);
//
//   // Pipeline parallel: the batch cut into micro-batches of 16 rows; stage 0 works on
//   // micro-batch k + 1 while stage 1 works on micro-batch k, forward and backward.
//   nd::NDArray loss = net.forward_backward(x, y, nn::softmax_cross_entropy_loss,
//                                           {.split_size = 16});
//   trainer.step(batch);                          // one update from the summed gradients
//
// forward() moves its input to each stage's device before the stage runs (as_in_context: no
// copy when it is there already); the output is on the last stage's device. Two consecutive
// stages may share a device.
//
// forward_backward() pushes, from the calling thread and without waiting, each micro-batch's
// forward and backward stage by stage in the order of `schedule` (tandem/nn/pipeline_schedule.h
// says why that order is the whole pipeline). The stages are cut apart for it: a stage's input
// is a fresh array (the previous stage's output copied to this device) with a gradient of its
// own, and a stage's backward starts from the gradient of the next stage's input, copied back.
// Each task's first array is ordered after the last arrays of the stage's previous task by a
// no-op engine op ("pipeline_order"), because a device launches ready ops in the order they
// became ready: without it the micro-batches would run breadth first, layer by layer, and the
// stages would barely overlap.
// Gradients are accumulated over the micro-batches: the call sets the grad_req of every
// parameter that has one to add and zeroes the gradients first, so afterwards each gradient is
// the sum over the whole batch, as one backward of the whole batch would give (up to the order
// of the sum: the micro-batches' parts are added one after the other, not in one product, so
// float32 results differ in the last bits). The grad_req stays add afterwards: a plain
// backward through this network then adds to the gradients (collect_params().zero_grad()
// first). BatchNorm sees micro-batches, as in GPipe.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "tandem/device.h"
#include "tandem/nn/block.h"
#include "tandem/nn/pipeline_schedule.h"

namespace tandem::nn {

// A loss of one micro-batch: the network's output and the matching rows of the labels (both on
// the last stage's device) to a one-element loss, or one loss per row (summed by the caller).
using LossFunction =
    std::function<nd::NDArray(const nd::NDArray& output, const nd::NDArray& label)>;

// nd::softmax_cross_entropy(output, label), summed over the rows.
nd::NDArray softmax_cross_entropy_loss(const nd::NDArray& output, const nd::NDArray& label);

struct PipelineOptions {
  // Rows per micro-batch (the last one takes what is left). Must be >= 1 and at most the
  // batch's rows.
  std::int64_t split_size = 0;
  PipelineSchedule schedule = PipelineSchedule::one_forward_one_backward;
};

class Pipeline : public Block {
 public:
  // Appends a stage that runs `block` on `device` and returns *this. Throws tandem::Error when
  // the device is not present, or when no copy path joins it to the previous stage's device (a
  // cuda and a sim device: put a cpu stage between them or use devices of one kind).
  Pipeline& add_stage(std::shared_ptr<Block> block, Device device);
  template <std::derived_from<Block> B>
  Pipeline& add_stage(B block, Device device) {
    return add_stage(std::static_pointer_cast<Block>(std::make_shared<B>(std::move(block))),
                     device);
  }

  std::size_t stages() const { return devices_.size(); }
  Device stage_device(std::size_t stage) const;
  Block& stage(std::size_t stage) const;

  // Initializes each stage's parameters on that stage's device (hides Block::initialize, whose
  // device list would put every stage on the same devices).
  void initialize(const Initializer& init = Uniform(), bool force_reinit = false);

  // The whole batch through every stage in turn (model parallel); the output is on the last
  // stage's device. Recorded by autograd like any block.
  nd::NDArray forward(const nd::NDArray& x) override;

  // One batch's forward and backward, pipelined over micro-batches of options.split_size rows;
  // returns the summed loss (one element, on the last stage's device; queued, not waited). The
  // rows of `data` and `label` match (any device). Throws tandem::Error before pushing anything
  // for a pipeline without stages, a split_size < 1 or larger than the batch, or data and labels
  // of different row counts. Call it outside autograd::record(): it records the forwards itself
  // (train mode).
  nd::NDArray forward_backward(const nd::NDArray& data, const nd::NDArray& label,
                               const LossFunction& loss, const PipelineOptions& options);

 private:
  void check_batch(const nd::NDArray& data, const nd::NDArray& label,
                   const PipelineOptions& options) const;

  std::vector<std::shared_ptr<Block>> blocks_;
  std::vector<Device> devices_;
};

}  // namespace tandem::nn
