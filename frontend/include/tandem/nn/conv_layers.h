// Convolution and pooling layers (Gluon's nn.Conv2D, MaxPool2D, AvgPool2D, GlobalAvgPool2D), on
// NCHW inputs, over nd::conv2d and the pooling ops of tandem/nd/pooling.h.
//
//   nn::Sequential net;
//   net.add(nn::Conv2D(6, 3, {.padding = 1, .activation = nn::relu}))   // in_channels deferred
//       .add(nn::MaxPool2D(2))
//       .add(nn::Conv2D(16, 3, {.activation = nn::relu}))
//       .add(nn::MaxPool2D(2))
//       .add(nn::Flatten())
//       .add(nn::Dense(10));
//
// Conv2D's weight has shape (channels, in_channels / groups, KH, KW), its bias (channels). With
// in_channels left 0 the weight's second dimension comes from the first input (deferred shape
// inference); a later input with another channel count throws tandem::Error naming the layer's
// weight and both shapes. Each forward uses the parameters' copy on the input's device.
#pragma once

#include <cstdint>
#include <memory>

#include "tandem/nd/convolution.h"
#include "tandem/nd/pooling.h"
#include "tandem/nn/activation.h"
#include "tandem/nn/block.h"

namespace tandem::nn {

struct Conv2DOptions {
  nd::Size2d stride{1};
  nd::Size2d padding{0};
  nd::Size2d dilation{1};
  std::int64_t groups = 1;
  bool use_bias = true;
  ActivationType activation = ActivationType::none;
  std::int64_t in_channels = 0;  // 0: inferred at the first forward
  nd::DType dtype = nd::float32;
  std::shared_ptr<const Initializer> weight_init = nullptr;  // null: initialize()'s
  std::shared_ptr<const Initializer> bias_init = std::make_shared<Zeros>();
};

class Conv2D : public Block {
 public:
  Conv2D(std::int64_t channels, nd::Size2d kernel, Conv2DOptions options = {});

  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;

  std::int64_t channels() const { return channels_; }
  Parameter& weight() const { return *weight_; }
  // Throws tandem::Error for a layer made with use_bias = false.
  Parameter& bias() const;

 private:
  std::int64_t channels_;
  nd::Size2d kernel_;
  Conv2DOptions options_;
  nd::Conv2dOptions conv_;
  ActivationType activation_;
  std::shared_ptr<Parameter> weight_;
  std::shared_ptr<Parameter> bias_;  // null without bias
};

// Max pooling; the stride defaults to the pool size.
class MaxPool2D : public Block {
 public:
  explicit MaxPool2D(nd::Size2d pool_size = 2, nd::Size2d stride = 0, nd::Size2d padding = 0);
  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;

 private:
  nd::Pool2dOptions options_;
};

// Average pooling; count_include_pad as in nd::avg_pool2d.
class AvgPool2D : public Block {
 public:
  explicit AvgPool2D(nd::Size2d pool_size = 2, nd::Size2d stride = 0, nd::Size2d padding = 0,
                     bool count_include_pad = true);
  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;

 private:
  nd::Pool2dOptions options_;
};

// (N, C, H, W) -> (N, C, 1, 1): the mean of each channel.
class GlobalAvgPool2D : public Block {
 public:
  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;
};

}  // namespace tandem::nn
