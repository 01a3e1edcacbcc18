// Seconds per training step of TwoStageShape's network placed three ways: on one device, split
// over two devices (model parallel), and split with the batch pipelined in micro-batches
// (pipeline parallel). Shared by pipeline_parallel, model_parallel and bench_multi_device.
//
//   StepTimer timer(shape, tandem::sim(0), tandem::sim(1));
//   double one = timer.seconds_per_step(Placement::one_device, {.steps = 3});
//   double piped = timer.seconds_per_step(Placement::pipeline, {.steps = 3, .split_size = 12});
//
// Each measurement builds a fresh network (the same initial values every time), trains one
// warm-up step, then `rounds` rounds of `steps` steps, each round timed from its first push to
// nd::waitall(); it returns the median round's seconds per step. Nothing waits inside a round:
// steps are pushed back to back, as a training loop would.
#pragma once

#include <tandem/nd/autograd.h>
#include <tandem/nd/network.h>
#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "two_stage_model.h"

namespace tandem::examples {

enum class Placement { one_device, model_parallel, pipeline };

inline const char* placement_name(Placement placement) {
  switch (placement) {
    case Placement::one_device:
      return "one device";
    case Placement::model_parallel:
      return "model parallel";
    case Placement::pipeline:
      return "pipeline";
  }
  return "?";
}

struct StepTimingOptions {
  int steps = 3;
  int rounds = 3;
  std::int64_t split_size = 0;  // Placement::pipeline only
  nn::PipelineSchedule schedule = nn::PipelineSchedule::one_forward_one_backward;
};

class StepTimer {
 public:
  StepTimer(TwoStageShape shape, Device first, Device second)
      : shape_(shape), first_(first), second_(second) {
    nd::random::seed(7);
    data_ = nd::random::uniform({shape_.batch, shape_.features}, first_);
    labels_ = nd::random::uniform(0, static_cast<double>(shape_.classes), {shape_.batch})
                  .astype(nd::int32)
                  .as_in_context(second_);
    labels_on_first_ = labels_.as_in_context(first_);
  }

  // A network placed as `placement` asks (one_device: both stages on `first`), initialized with
  // the same values every time.
  nn::Pipeline make_network(Placement placement) const {
    nn::Pipeline net;
    const Device second = placement == Placement::one_device ? first_ : second_;
    net.add_stage(make_first_stage(shape_), first_).add_stage(make_second_stage(shape_), second);
    net.initialize(nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3.0,
                              /*seed=*/3));
    return net;
  }

  // One training step: forward, backward and the optimizer's update, all queued. Returns the
  // loss (summed over the batch; not waited).
  nd::NDArray step(nn::Pipeline& net, nn::Trainer& trainer, Placement placement,
                   const StepTimingOptions& options) const {
    const nd::NDArray& labels = placement == Placement::one_device ? labels_on_first_ : labels_;
    nd::NDArray loss;
    if (placement == Placement::pipeline) {
      loss = net.forward_backward(data_, labels, nn::softmax_cross_entropy_loss,
                                  {.split_size = options.split_size, .schedule = options.schedule});
    } else {
      {
        auto recording = autograd::record();
        loss = nn::softmax_cross_entropy_loss(net(data_), labels);
      }
      loss.backward();
    }
    trainer.step(shape_.batch);
    return loss;
  }

  double seconds_per_step(Placement placement, const StepTimingOptions& options) const {
    nn::Pipeline net = make_network(placement);
    nn::Trainer trainer(net.collect_params(), nn::SGD(0.01));
    step(net, trainer, placement, options);  // warm-up: memory pools, first launches
    nd::waitall();
    std::vector<double> per_step;
    for (int round = 0; round < options.rounds; ++round) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < options.steps; ++i) step(net, trainer, placement, options);
      nd::waitall();
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      per_step.push_back(elapsed.count() / options.steps);
    }
    std::sort(per_step.begin(), per_step.end());
    return per_step[per_step.size() / 2];
  }

  const TwoStageShape& shape() const { return shape_; }

 private:
  TwoStageShape shape_;
  Device first_, second_;
  nd::NDArray data_, labels_, labels_on_first_;
};

}  // namespace tandem::examples
