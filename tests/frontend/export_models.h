// The networks the export tests save: built here, in the test, and never linked into the
// program that loads them (export_runner.cc).
#pragma once

#include <tandem/tandem.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace tandem::testing {

namespace export_models {

namespace nn = tandem::nn;

inline nn::Sequential mlp() {
  nn::Sequential net;
  net.add(nn::Dense(16, nn::relu)).add(nn::Dense(8, nn::tanh)).add(nn::Dense(3));
  return net;
}

// LeNet-style: convolutions, pooling, BatchNorm (its running statistics in predict mode).
inline nn::Sequential lenet() {
  nn::Sequential net;
  net.add(nn::Conv2D(4, 3, {.padding = 1}))
      .add(nn::BatchNorm())
      .add(nn::Activation(nn::relu))
      .add(nn::MaxPool2D(2))
      .add(nn::Conv2D(6, 3, {.activation = nn::relu}))
      .add(nn::AvgPool2D(2))
      .add(nn::Flatten())
      .add(nn::Dense(10));
  return net;
}

// A block of the user's own: out = softmax(relu(x + dense2(sigmoid(dense1(x)))) * 0.5 - 1).
class Residual : public nn::Block {
 public:
  explicit Residual(std::int64_t width)
      : dense1_(register_child("dense1", nn::Dense(width))),
        dense2_(register_child("dense2", nn::Dense(width))) {}
  nd::NDArray forward(const nd::NDArray& x) override {
    const nd::NDArray inner = (*dense2_)(nd::sigmoid((*dense1_)(x)));
    return nd::softmax(nd::relu(x + inner) * 0.5 - 1.0);
  }

 private:
  std::shared_ptr<nn::Dense> dense1_, dense2_;
};

// Values of BatchNorm's running statistics that make predict mode do something visible.
inline void set_running_statistics(nn::Block& net, Device device) {
  for (const auto& [name, parameter] : net.collect_params()) {
    const bool mean = name.ends_with("running_mean"), var = name.ends_with("running_var");
    if (!mean && !var) continue;
    std::vector<float> values(static_cast<std::size_t>(parameter->shape().num_elements()));
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = mean ? 0.1f * static_cast<float>(i) - 0.2f : 0.5f + 0.25f * static_cast<float>(i);
    }
    parameter->set_data(nd::from_vector(values, parameter->shape(), device));
  }
}

}  // namespace export_models

}  // namespace tandem::testing
