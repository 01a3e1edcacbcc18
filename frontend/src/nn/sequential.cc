// Sequential: children applied in order.
#include "tandem/nn/sequential.h"

#include "tandem/errors.h"

namespace tandem::nn {

std::shared_ptr<Block> Sequential::clone_structure() const {
  auto twin = std::make_shared<Sequential>();
  for (const auto& [name, child] : children()) twin->add(child->clone_structure());
  return twin;
}

nd::NDArray Sequential::forward(const nd::NDArray& x) {
  nd::NDArray y = x;
  for (const auto& [name, child] : children()) y = child->forward(y);
  return y;
}

Block& Sequential::operator[](std::size_t index) const {
  if (index >= size()) {
    throw Error("tandem: Sequential: no block " + std::to_string(index) + " (it has " +
                std::to_string(size()) + ")");
  }
  return *children()[index].second;
}

}  // namespace tandem::nn
