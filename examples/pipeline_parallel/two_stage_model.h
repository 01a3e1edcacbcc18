// The network that pipeline_parallel, model_parallel and bench_multi_device split over two
// devices: a wide multilayer perceptron whose halves do the same work, so that the two stages of
// a pipeline are balanced (the seed splits ResNet-50 the same way: half of its layers on each
// GPU). Its products are large enough that a sim device's modelled compute time, not the host's
// work of pushing the ops, sets the step time (two_device_sim_model.h).
//
//   TwoStageShape shape;                           // batch 120 x 512 features, 4 + 4 layers
//   nn::Pipeline net;
//   net.add_stage(make_first_stage(shape), tandem::sim(0))
//       .add_stage(make_second_stage(shape), tandem::sim(1));
#pragma once

#include <tandem/nn/nn.h>

#include <cstdint>
#include <memory>

namespace tandem::examples {

struct TwoStageShape {
  std::int64_t batch = 120;  // the seed's batch (PyTorch's model-parallel tutorial)
  std::int64_t features = 512;
  std::int64_t width = 512;
  int layers_per_stage = 4;
  std::int64_t classes = 10;
};

// layers_per_stage x Dense(width, relu), the first reading `features`.
inline std::shared_ptr<nn::Sequential> make_first_stage(const TwoStageShape& shape) {
  auto stage = std::make_shared<nn::Sequential>();
  for (int i = 0; i < shape.layers_per_stage; ++i) {
    stage->add(
        nn::Dense(shape.width, nn::relu, {.in_units = i == 0 ? shape.features : shape.width}));
  }
  return stage;
}

// layers_per_stage x Dense(width, relu), then Dense(classes): the logits (a small layer, so the
// stages stay balanced).
inline std::shared_ptr<nn::Sequential> make_second_stage(const TwoStageShape& shape) {
  auto stage = std::make_shared<nn::Sequential>();
  for (int i = 0; i < shape.layers_per_stage; ++i) {
    stage->add(nn::Dense(shape.width, nn::relu, {.in_units = shape.width}));
  }
  stage->add(nn::Dense(shape.classes, nn::ActivationType::none, {.in_units = shape.width}));
  return stage;
}

}  // namespace tandem::examples
