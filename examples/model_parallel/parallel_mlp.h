// Chainer's ParallelMLP ("model parallel" example) as a tandem Block: two branches, each an MLP
// cut in two halves, one branch per device; after each half the branches exchange their
// activations (a copy each way, recorded by autograd so that the gradients cross back), and the
// output is the sum of both branches on the first device.
//
//   ParallelMLP net(64, 10, tandem::sim(0), tandem::sim(1));
//   net.initialize_on_devices(nn::Xavier());   // branch 0 on sim(0), branch 1 on sim(1)
//   nd::NDArray logits = net(x);               // on sim(0)
//
// With both devices the same it is the same network on one device, op for op.
#pragma once

#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <cstdint>
#include <memory>

namespace tandem::examples {

class ParallelMLP : public nn::Block {
 public:
  ParallelMLP(std::int64_t units, std::int64_t classes, Device first, Device second)
      : first_(first),
        second_(second),
        first_half0_(register_child("first_half0", half(units / 2, units))),
        first_half1_(register_child("first_half1", half(units / 2, units))),
        second_half0_(register_child("second_half0", half(units / 2, classes))),
        second_half1_(register_child("second_half1", half(units / 2, classes))) {}

  // Branch 0's parameters on the first device, branch 1's on the second.
  void initialize_on_devices(const nn::Initializer& init) {
    first_half0_->collect_params().initialize(init, {first_});
    second_half0_->collect_params().initialize(init, {first_});
    first_half1_->collect_params().initialize(init, {second_});
    second_half1_->collect_params().initialize(init, {second_});
  }

  nd::NDArray forward(const nd::NDArray& x) override {
    const nd::NDArray z0 = (*first_half0_)(x.as_in_context(first_));
    const nd::NDArray z1 = (*first_half1_)(x.as_in_context(second_));
    // The exchange: each branch adds the other's activations.
    const nd::NDArray h0 = nd::relu(z0 + z1.as_in_context(first_));
    const nd::NDArray h1 = nd::relu(z1 + z0.as_in_context(second_));
    const nd::NDArray y0 = (*second_half0_)(h0);
    const nd::NDArray y1 = (*second_half1_)(h1);
    return y0 + y1.as_in_context(first_);
  }

 private:
  // Chainer's MLP: Dense(hidden) relu, Dense(out).
  static nn::Sequential half(std::int64_t hidden, std::int64_t out) {
    nn::Sequential mlp;
    mlp.add(nn::Dense(hidden, nn::relu)).add(nn::Dense(out));
    return mlp;
  }

  Device first_, second_;
  std::shared_ptr<nn::Sequential> first_half0_, first_half1_, second_half0_, second_half1_;
};

}  // namespace tandem::examples
