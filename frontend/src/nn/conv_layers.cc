// Conv2D and the pooling layers.
#include "tandem/nn/conv_layers.h"

#include <string>

#include "tandem/errors.h"

namespace tandem::nn {

Conv2D::Conv2D(std::int64_t channels, nd::Size2d kernel, Conv2DOptions options)
    : channels_(channels),
      kernel_(kernel),
      options_(options),
      conv_{.stride = options.stride,
            .padding = options.padding,
            .dilation = options.dilation,
            .groups = options.groups},
      activation_(options.activation) {
  if (channels < 1 || kernel.h < 1 || kernel.w < 1 || options.groups < 1 ||
      channels % options.groups != 0 || options.in_channels < 0 ||
      options.in_channels % options.groups != 0) {
    throw Error(
        "tandem: Conv2D: needs channels >= 1, kernel >= 1, groups >= 1 dividing channels "
        "and in_channels (0: inferred), got channels " +
        std::to_string(channels) + ", kernel " + kernel.to_string() + ", groups " +
        std::to_string(options.groups) + ", in_channels " + std::to_string(options.in_channels));
  }
  weight_ = register_parameter("weight",
                               {channels, options.in_channels / options.groups, kernel.h, kernel.w},
                               {.dtype = options.dtype, .init = options.weight_init});
  if (options.use_bias) {
    bias_ =
        register_parameter("bias", {channels}, {.dtype = options.dtype, .init = options.bias_init});
  }
}

std::shared_ptr<Block> Conv2D::clone_structure() const {
  return std::make_shared<Conv2D>(channels_, kernel_, options_);
}

std::shared_ptr<Block> MaxPool2D::clone_structure() const {
  auto twin = std::make_shared<MaxPool2D>();
  twin->options_ = options_;
  return twin;
}

std::shared_ptr<Block> AvgPool2D::clone_structure() const {
  auto twin = std::make_shared<AvgPool2D>();
  twin->options_ = options_;
  return twin;
}

std::shared_ptr<Block> GlobalAvgPool2D::clone_structure() const {
  return std::make_shared<GlobalAvgPool2D>();
}

Parameter& Conv2D::bias() const {
  if (!bias_) throw Error("tandem: Conv2D '" + prefix() + "': made with use_bias = false");
  return *bias_;
}

nd::NDArray Conv2D::forward(const nd::NDArray& x) {
  if (x.ndim() != 4) {
    throw Error("tandem: Conv2D '" + weight_->name() + "': needs an NCHW input, got shape " +
                x.shape().to_string());
  }
  const std::int64_t in_channels = x.shape()[1];
  if (!weight_->shape_known()) {
    if (in_channels % conv_.groups != 0) {
      throw Error("tandem: Conv2D '" + weight_->name() + "': the input's " +
                  std::to_string(in_channels) + " channels (shape " + x.shape().to_string() +
                  ") are not a multiple of groups " + std::to_string(conv_.groups));
    }
    weight_->set_shape({channels_, in_channels / conv_.groups, kernel_.h, kernel_.w});
  }
  if (weight_->shape()[1] * conv_.groups != in_channels) {
    throw Error("tandem: Conv2D '" + weight_->name() + "': the input has " +
                std::to_string(in_channels) + " channels (shape " + x.shape().to_string() +
                ") but the weight has shape " + weight_->shape().to_string() + " and groups " +
                std::to_string(conv_.groups));
  }
  const nd::NDArray y =
      bias_ ? nd::conv2d(x, weight_->data(x.device()), bias_->data(x.device()), conv_)
            : nd::conv2d(x, weight_->data(x.device()), conv_);
  return activate(y, activation_);
}

MaxPool2D::MaxPool2D(nd::Size2d pool_size, nd::Size2d stride, nd::Size2d padding)
    : options_{.kernel = pool_size, .stride = stride, .padding = padding} {}

nd::NDArray MaxPool2D::forward(const nd::NDArray& x) {
  return nd::max_pool2d(x, options_);
}

AvgPool2D::AvgPool2D(nd::Size2d pool_size, nd::Size2d stride, nd::Size2d padding,
                     bool count_include_pad)
    : options_{.kernel = pool_size,
               .stride = stride,
               .padding = padding,
               .count_include_pad = count_include_pad} {}

nd::NDArray AvgPool2D::forward(const nd::NDArray& x) {
  return nd::avg_pool2d(x, options_);
}

nd::NDArray GlobalAvgPool2D::forward(const nd::NDArray& x) {
  return nd::global_avg_pool2d(x);
}

}  // namespace tandem::nn
