// Sequential: children applied in order.
#include "tandem/nn/sequential.h"

#include "tandem/errors.h"

namespace tandem::nn {

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
