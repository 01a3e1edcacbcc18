// Sequential: blocks applied one after the other (Gluon's nn.Sequential).
//
//   nn::Sequential net;
//   net.add(nn::Dense(64, nn::relu)).add(nn::Dense(10));
//   net.initialize(nn::Xavier());
//   nd::NDArray logits = net(x);           // dense 1, then dense 2
//
// The children are named "0", "1", ... in the order they were added, so the parameters are
// "0.weight", "0.bias", "1.weight", ...
#pragma once

#include <concepts>
#include <memory>
#include <string>
#include <utility>

#include "tandem/nn/block.h"

namespace tandem::nn {

class Sequential : public Block {
 public:
  // Appends `block` (moved in) and returns *this, so that adds chain.
  template <std::derived_from<Block> B>
  Sequential& add(B block) {
    return add(std::make_shared<B>(std::move(block)));
  }
  // Appends a block held elsewhere too (its parameters are then shared).
  Sequential& add(std::shared_ptr<Block> block) {
    register_child(std::to_string(children().size()), std::move(block));
    return *this;
  }

  nd::NDArray forward(const nd::NDArray& x) override;
  // A Sequential of the children's clone_structure(), in order.
  std::shared_ptr<Block> clone_structure() const override;

  std::size_t size() const { return children().size(); }
  // The i-th block; throws tandem::Error when there is none.
  Block& operator[](std::size_t index) const;
};

}  // namespace tandem::nn
