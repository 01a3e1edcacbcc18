// Dense: a fully connected layer, out = activation(x . weight^T + bias) (Gluon's nn.Dense).
//
//   nn::Dense layer(64, nn::relu);                  // input width found at the first forward
//   nn::Dense fixed(10, nn::ActivationType::none, {.in_units = 64});   // known now
//
// weight has shape (units, in_units), bias (units). An input of more than 2 dimensions is
// flattened to (batch, rest) first, as Gluon does. With in_units left 0 the weight's second
// dimension is taken from the first input (deferred shape inference); a later input of another
// width throws tandem::Error naming the layer's weight and both shapes.
#pragma once

#include <cstdint>
#include <memory>

#include "tandem/nn/activation.h"
#include "tandem/nn/block.h"

namespace tandem::nn {

struct DenseOptions {
  bool use_bias = true;
  std::int64_t in_units = 0;  // 0: inferred at the first forward
  nd::DType dtype = nd::float32;
  std::shared_ptr<const Initializer> weight_init = nullptr;  // null: initialize()'s
  std::shared_ptr<const Initializer> bias_init = std::make_shared<Zeros>();
};

class Dense : public Block {
 public:
  explicit Dense(std::int64_t units, ActivationType activation = ActivationType::none,
                 DenseOptions options = {});

  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;

  std::int64_t units() const { return units_; }
  Parameter& weight() const { return *weight_; }
  // Throws tandem::Error for a layer made with use_bias = false.
  Parameter& bias() const;

 private:
  std::int64_t units_;
  ActivationType activation_;
  DenseOptions options_;
  std::shared_ptr<Parameter> weight_;
  std::shared_ptr<Parameter> bias_;  // null without bias
};

}  // namespace tandem::nn
