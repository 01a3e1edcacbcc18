// The networks train_lenet (and bench/training) can train on the digits, by name. Adding one is
// one function and one row of models().
//
//   std::shared_ptr<tandem::nn::Block> net = tandem::examples::make_model("mlp");
//
// Every model takes a batch of images (batch, 8, 8) and returns logits (batch, 10).
#pragma once

#include <tandem/nn/nn.h>
#include <tandem/tandem.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tandem::examples {

// A multilayer perceptron: flatten, 64 hidden units (ReLU), 10 logits.
inline std::shared_ptr<nn::Block> make_mlp() {
  auto net = std::make_shared<nn::Sequential>();
  net->add(nn::Flatten()).add(nn::Dense(64, nn::relu)).add(nn::Dense(10));
  return net;
}

// (batch, 8, 8) images as (batch, 1, 8, 8): one channel, for the convolutions.
class OneChannel : public nn::Block {
 public:
  nd::NDArray forward(const nd::NDArray& x) override {
    return x.ndim() == 3 ? x.reshape({x.shape()[0], 1, x.shape()[1], x.shape()[2]}) : x;
  }
};

// The LeNet family for 8x8 images: Conv2D(c1, 3x3, padding 1) [BatchNorm] relu -> MaxPool2D(2)
// -> Conv2D(c2, 3x3, padding 0 or 1) [BatchNorm] relu -> MaxPool2D(2) -> Flatten [-> Dropout]
// [-> Dense(h) relu for each h of hidden] -> Dense(10). Shapes for LeNet's (6, 16), second
// convolution unpadded: 1x8x8 -> 6x8x8 -> 6x4x4 -> 16x2x2 -> 16x1x1 (16 features); padded:
// -> 16x4x4 -> 16x2x2 (64 features).
struct LeNetShape {
  std::int64_t c1 = 6, c2 = 16;
  bool pad_second = false;             // pad the second convolution (4x more features)
  bool batch_norm = false;             // BatchNorm after each convolution, before its relu
  double dropout = 0;                  // on the features before the classifier; 0: none
  std::vector<std::int64_t> hidden{};  // hidden Dense layers of the classifier
};

inline std::shared_ptr<nn::Block> make_lenet(const LeNetShape& shape) {
  auto net = std::make_shared<nn::Sequential>();
  net->add(OneChannel());
  const auto convolution = [&](std::int64_t channels, std::int64_t padding) {
    if (shape.batch_norm) {
      net->add(nn::Conv2D(channels, 3, {.padding = padding}))
          .add(nn::BatchNorm())
          .add(nn::Activation(nn::relu));
    } else {
      net->add(nn::Conv2D(channels, 3, {.padding = padding, .activation = nn::relu}));
    }
    net->add(nn::MaxPool2D(2));
  };
  convolution(shape.c1, 1);
  convolution(shape.c2, shape.pad_second ? 1 : 0);
  net->add(nn::Flatten());
  if (shape.dropout > 0) net->add(nn::Dropout(shape.dropout));
  for (const std::int64_t units : shape.hidden) net->add(nn::Dense(units, nn::relu));
  net->add(nn::Dense(10));
  return net;
}

// A residual block written as user code: out = relu(x + bn2(dense2(relu(bn1(dense1(x)))))).
class DenseResidual : public nn::Block {
 public:
  explicit DenseResidual(std::int64_t width)
      : dense1_(register_child("dense1", nn::Dense(width))),
        bn1_(register_child("bn1", nn::BatchNorm())),
        dense2_(register_child("dense2", nn::Dense(width))),
        bn2_(register_child("bn2", nn::BatchNorm())) {}

  nd::NDArray forward(const nd::NDArray& x) override {
    const nd::NDArray h = nd::relu((*bn1_)((*dense1_)(x)));
    return nd::relu(x + (*bn2_)((*dense2_)(h)));
  }

 private:
  std::shared_ptr<nn::Dense> dense1_;
  std::shared_ptr<nn::BatchNorm> bn1_;
  std::shared_ptr<nn::Dense> dense2_;
  std::shared_ptr<nn::BatchNorm> bn2_;
};

// Flatten, 64 units, two residual blocks with BatchNorm, 10 logits: the seeds' ResNet idea
// without convolutions.
inline std::shared_ptr<nn::Block> make_residual_mlp() {
  auto net = std::make_shared<nn::Sequential>();
  net->add(nn::Flatten()).add(nn::Dense(64, nn::relu)).add(DenseResidual(64));
  net->add(DenseResidual(64)).add(nn::Dense(10));
  return net;
}

// ResNet's basic block written as user code:
// out = relu(shortcut(x) + bn2(conv2(relu(bn1(conv1(x)))))), the 3x3 convolutions padded, the
// first with `stride`; the shortcut is x itself, or a strided 1x1 convolution + BatchNorm when
// the block changes the channels or the size.
class ConvResidual : public nn::Block {
 public:
  ConvResidual(std::int64_t channels, std::int64_t stride, bool project)
      : conv1_(register_child(
            "conv1", nn::Conv2D(channels, 3, {.stride = stride, .padding = 1, .use_bias = false}))),
        bn1_(register_child("bn1", nn::BatchNorm())),
        conv2_(register_child("conv2", nn::Conv2D(channels, 3, {.padding = 1, .use_bias = false}))),
        bn2_(register_child("bn2", nn::BatchNorm())) {
    if (project) {
      shortcut_conv_ = register_child(
          "shortcut_conv", nn::Conv2D(channels, 1, {.stride = stride, .use_bias = false}));
      shortcut_bn_ = register_child("shortcut_bn", nn::BatchNorm());
    }
  }

  nd::NDArray forward(const nd::NDArray& x) override {
    const nd::NDArray h = nd::relu((*bn1_)((*conv1_)(x)));
    const nd::NDArray y = (*bn2_)((*conv2_)(h));
    const nd::NDArray shortcut = shortcut_conv_ ? (*shortcut_bn_)((*shortcut_conv_)(x)) : x;
    return nd::relu(shortcut + y);
  }

 private:
  std::shared_ptr<nn::Conv2D> conv1_;
  std::shared_ptr<nn::BatchNorm> bn1_;
  std::shared_ptr<nn::Conv2D> conv2_;
  std::shared_ptr<nn::BatchNorm> bn2_;
  std::shared_ptr<nn::Conv2D> shortcut_conv_;  // null: the identity shortcut
  std::shared_ptr<nn::BatchNorm> shortcut_bn_;
};

// A small ResNet for 8x8 images, the seeds' ResNet-18 shape scaled down: a 3x3 stem with
// BatchNorm, a residual block at 16 channels (8x8), one at 32 channels that halves the size
// (4x4), global average pooling, 10 logits.
inline std::shared_ptr<nn::Block> make_resnet() {
  auto net = std::make_shared<nn::Sequential>();
  net->add(OneChannel())
      .add(nn::Conv2D(16, 3, {.padding = 1, .use_bias = false}))
      .add(nn::BatchNorm())
      .add(nn::Activation(nn::relu))
      .add(ConvResidual(16, 1, false))
      .add(ConvResidual(32, 2, true))
      .add(nn::GlobalAvgPool2D())
      .add(nn::Flatten())
      .add(nn::Dense(10));
  return net;
}

using ModelBuilder = std::function<std::shared_ptr<nn::Block>()>;

// The models by name, in the order --help lists them.
inline const std::vector<std::pair<std::string, ModelBuilder>>& models() {
  static const std::vector<std::pair<std::string, ModelBuilder>> table = {
      // LeNet; lenet5 has LeNet-5's classifier (120, 84); lenet_bn is the default recipe's.
      {"lenet", [] { return make_lenet({}); }},
      {"lenet_dropout", [] { return make_lenet({.dropout = 0.25}); }},
      {"lenet_pad", [] { return make_lenet({.pad_second = true}); }},
      {"lenet_wide", [] { return make_lenet({.c1 = 16, .c2 = 32, .pad_second = true}); }},
      {"lenet_bn",
       [] { return make_lenet({.c1 = 16, .c2 = 32, .pad_second = true, .batch_norm = true}); }},
      {"lenet_bn_dropout",
       [] {
         return make_lenet(
             {.c1 = 16, .c2 = 32, .pad_second = true, .batch_norm = true, .dropout = 0.25});
       }},
      {"lenet_bn_wide",
       [] { return make_lenet({.c1 = 32, .c2 = 64, .pad_second = true, .batch_norm = true}); }},
      {"lenet5",
       [] {
         return make_lenet({.pad_second = true, .hidden = {120, 84}});
       }},
      {"lenet5_dropout",
       [] {
         return make_lenet({.pad_second = true, .dropout = 0.5, .hidden = {120, 84}});
       }},
      {"mlp", make_mlp},
      {"residual_mlp", make_residual_mlp},
      {"resnet", make_resnet},
  };
  return table;
}

// "mlp, ..." for messages.
inline std::string model_names() {
  std::string names;
  for (const auto& [name, builder] : models()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// The model called `name`, freshly built (parameters not initialized); null when there is none.
inline std::shared_ptr<nn::Block> make_model(const std::string& name) {
  for (const auto& [model_name, builder] : models()) {
    if (model_name == name) return builder();
  }
  return nullptr;
}

// The model called `name`, as make_model builds it; throws, naming the models there are, when
// there is none.
inline std::shared_ptr<nn::Block> require_model(const std::string& name) {
  std::shared_ptr<nn::Block> model = make_model(name);
  if (model) return model;
  std::string message = "no model called '";  // appended: GCC 12 -Wrestrict misfires on "lit" + s
  message += name;
  message += "' (there are: ";
  message += model_names();
  message += ")";
  throw Error(message);
}

}  // namespace tandem::examples
