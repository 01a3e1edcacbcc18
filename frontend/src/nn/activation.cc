// The activation functions by name.
#include "tandem/nn/activation.h"

#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"

namespace tandem::nn {

std::string to_string(ActivationType type) {
  switch (type) {
    case ActivationType::none:
      return "none";
    case ActivationType::relu:
      return "relu";
    case ActivationType::sigmoid:
      return "sigmoid";
    case ActivationType::tanh:
      return "tanh";
  }
  return "unknown";
}

nd::NDArray activate(const nd::NDArray& x, ActivationType type) {
  switch (type) {
    case ActivationType::none:
      return x;
    case ActivationType::relu:
      return nd::relu(x);
    case ActivationType::sigmoid:
      return nd::sigmoid(x);
    case ActivationType::tanh:
      return nd::tanh(x);
  }
  throw Error("tandem: activate: unknown activation type");
}

}  // namespace tandem::nn
