#include "tandem/nn/models.h"

#include <string>

#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nn/activation.h"
#include "tandem/nn/basic_layers.h"
#include "tandem/nn/dense.h"

namespace tandem::nn::models {

Residual::Residual(std::int64_t channels, bool use_1x1conv, std::int64_t stride)
    : channels_(channels), stride_(stride) {
  if (channels < 1 || stride < 1) {
    throw Error("tandem: models::Residual: channels and stride must be >= 1, got channels " +
                std::to_string(channels) + ", stride " + std::to_string(stride));
  }
  conv1_ = register_child("conv1", Conv2D(channels, 3, {.stride = stride, .padding = 1}));
  conv2_ = register_child("conv2", Conv2D(channels, 3, {.padding = 1}));
  if (use_1x1conv) conv3_ = register_child("conv3", Conv2D(channels, 1, {.stride = stride}));
  bn1_ = register_child("bn1", BatchNorm());
  bn2_ = register_child("bn2", BatchNorm());
}

std::shared_ptr<Block> Residual::clone_structure() const {
  return std::make_shared<Residual>(channels_, conv3_ != nullptr, stride_);
}

nd::NDArray Residual::forward(const nd::NDArray& x) {
  const nd::NDArray y = (*bn2_)((*conv2_)(nd::relu((*bn1_)((*conv1_)(x)))));
  return nd::relu(y + (conv3_ ? (*conv3_)(x) : x));
}

namespace {

void check_classes(const char* model, std::int64_t num_classes) {
  if (num_classes < 1) {
    throw Error(std::string("tandem: models::") + model + ": num_classes must be >= 1, got " +
                std::to_string(num_classes));
  }
}

// d2l's resnet_block: `residuals` blocks of `channels`; the first halves the size and projects
// the shortcut unless it is the first stage's.
Sequential resnet_stage(std::int64_t channels, int residuals, bool first_stage) {
  Sequential stage;
  for (int i = 0; i < residuals; ++i) {
    if (i == 0 && !first_stage) {
      stage.add(Residual(channels, /*use_1x1conv=*/true, /*stride=*/2));
    } else {
      stage.add(Residual(channels));
    }
  }
  return stage;
}

}  // namespace

std::shared_ptr<Sequential> resnet18(std::int64_t num_classes) {
  check_classes("resnet18", num_classes);
  auto net = std::make_shared<Sequential>();
  net->add(Conv2D(64, 3, {.padding = 1})).add(BatchNorm()).add(Activation(relu));
  net->add(resnet_stage(64, 2, /*first_stage=*/true))
      .add(resnet_stage(128, 2, false))
      .add(resnet_stage(256, 2, false))
      .add(resnet_stage(512, 2, false));
  net->add(GlobalAvgPool2D()).add(Dense(num_classes));
  return net;
}

std::shared_ptr<Sequential> lenet(LeNetStyle style, std::int64_t num_classes) {
  check_classes("lenet", num_classes);
  const ActivationType activation = style == LeNetStyle::classic ? sigmoid : relu;
  const auto pool = [&](Sequential& net) -> Sequential& {
    if (style == LeNetStyle::classic) return net.add(AvgPool2D(2));
    return net.add(MaxPool2D(2));
  };
  auto net = std::make_shared<Sequential>();
  net->add(Conv2D(6, 5, {.padding = 2, .activation = activation}));
  pool(*net).add(Conv2D(16, 5, {.activation = activation}));
  pool(*net).add(Dense(120, activation)).add(Dense(84, activation)).add(Dense(num_classes));
  return net;
}

}  // namespace tandem::nn::models
