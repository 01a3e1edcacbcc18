// Activation functions as a layer, and the choice a Dense layer takes.
//
//   net.add(nn::Dense(64)).add(nn::Activation(nn::relu));   // the same as nn::Dense(64, nn::relu)
#pragma once

#include <string>

#include "tandem/nn/block.h"

namespace tandem::nn {

enum class ActivationType { none, relu, sigmoid, tanh };
inline constexpr ActivationType relu = ActivationType::relu;
inline constexpr ActivationType sigmoid = ActivationType::sigmoid;
inline constexpr ActivationType tanh = ActivationType::tanh;

// "relu", "sigmoid", "tanh", "none".
std::string to_string(ActivationType type);
// `x` through the activation (x itself for none).
nd::NDArray activate(const nd::NDArray& x, ActivationType type);

class Activation : public Block {
 public:
  explicit Activation(ActivationType type) : type_(type) {}
  nd::NDArray forward(const nd::NDArray& x) override { return activate(x, type_); }
  std::shared_ptr<Block> clone_structure() const override {
    return std::make_shared<Activation>(type_);
  }
  ActivationType type() const { return type_; }

 private:
  ActivationType type_;
};

}  // namespace tandem::nn
