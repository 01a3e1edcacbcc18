// Ready-made networks (Gluon's model zoo, d2l's versions): ResNet-18 for 28x28 images and the
// two LeNets, as blocks a user builds in one line.
//
//   auto net = nn::models::resnet18(10);        // (N, 1, 28, 28) -> (N, 10) logits
//   net->initialize(nn::Normal(0.01), {tandem::sim(0), tandem::sim(1)});
//   auto lenet = nn::models::lenet(nn::models::LeNetStyle::classic);
//
// The input channel count is inferred at the first forward (any C works); the networks are
// plain Sequentials of the library's layers, so hybridize(), save_parameters() and data
// parallelism work on them as on any other block. Parameters are named by position
// ("0.weight", "3.0.conv1.weight", ...).
#pragma once

#include <cstdint>
#include <memory>

#include "tandem/nn/batch_norm.h"
#include "tandem/nn/conv_layers.h"
#include "tandem/nn/sequential.h"

namespace tandem::nn::models {

// d2l's residual block: out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), both
// convolutions 3x3 with padding 1 (the first with `stride`), each with a bias as in Gluon;
// the shortcut is x, or with `use_1x1conv` a 1x1 convolution with `stride` (no BatchNorm).
// Throws tandem::Error for channels or stride < 1.
class Residual : public Block {
 public:
  Residual(std::int64_t channels, bool use_1x1conv = false, std::int64_t stride = 1);
  nd::NDArray forward(const nd::NDArray& x) override;
  std::shared_ptr<Block> clone_structure() const override;

 private:
  std::int64_t channels_, stride_;
  std::shared_ptr<Conv2D> conv1_, conv2_, conv3_;  // conv3_: null for the identity shortcut
  std::shared_ptr<BatchNorm> bn1_, bn2_;
};

// d2l's ResNet-18 for small images (seed 003, section 8.5): a 3x3 stem of 64 channels (stride
// 1, padding 1, no max pooling) with BatchNorm and relu; four stages of two Residual blocks at
// 64, 128, 256 and 512 channels, each stage but the first halving the size; global average
// pooling; Dense(num_classes). On 28x28 inputs the stages see 28, 14, 7 and 4 pixels a side.
// Throws tandem::Error for num_classes < 1.
std::shared_ptr<Sequential> resnet18(std::int64_t num_classes);

enum class LeNetStyle {
  classic,  // LeCun's: sigmoid activations, average pooling (d2l 5.5, seed 003's LeNet)
  modern,   // relu activations, max pooling
};

// LeNet-5 for 28x28 images: Conv2D(6, 5x5, padding 2) -> pool 2 -> Conv2D(16, 5x5) -> pool 2
// -> Dense(120) -> Dense(84) -> Dense(num_classes), the activations and pooling by `style`.
// Throws tandem::Error for num_classes < 1.
std::shared_ptr<Sequential> lenet(LeNetStyle style = LeNetStyle::classic,
                                  std::int64_t num_classes = 10);

}  // namespace tandem::nn::models
