// Dense: x . weight^T + bias, with the weight's input width inferred at the first forward.
#include "tandem/nn/dense.h"

#include "tandem/errors.h"
#include "tandem/nd/elementwise.h"
#include "tandem/nd/linalg.h"
#include "tandem/nd/network.h"

namespace tandem::nn {

Dense::Dense(std::int64_t units, ActivationType activation, DenseOptions options)
    : units_(units), activation_(activation), options_(options) {
  if (units < 1 || options.in_units < 0) {
    throw Error("tandem: Dense: units must be >= 1 and in_units >= 0 (0: inferred), got units " +
                std::to_string(units) + ", in_units " + std::to_string(options.in_units));
  }
  weight_ = register_parameter("weight", {units, options.in_units},
                               {.dtype = options.dtype, .init = options.weight_init});
  if (options.use_bias) {
    bias_ =
        register_parameter("bias", {units}, {.dtype = options.dtype, .init = options.bias_init});
  }
}

std::shared_ptr<Block> Dense::clone_structure() const {
  return std::make_shared<Dense>(units_, activation_, options_);
}

Parameter& Dense::bias() const {
  if (!bias_) throw Error("tandem: Dense '" + prefix() + "': made with use_bias = false");
  return *bias_;
}

nd::NDArray Dense::forward(const nd::NDArray& x) {
  if (x.ndim() < 2) {
    throw Error("tandem: Dense '" + weight_->name() +
                "': needs an input of shape (batch, ...), "
                "got " +
                x.shape().to_string());
  }
  const nd::NDArray flat = x.ndim() == 2 ? x : x.reshape({x.shape()[0], -1});
  const std::int64_t in_units = flat.shape()[1];
  if (!weight_->shape_known()) weight_->set_shape({units_, in_units});
  if (weight_->shape()[1] != in_units) {
    throw Error("tandem: Dense '" + weight_->name() + "': the input has " +
                std::to_string(in_units) + " features (shape " + x.shape().to_string() +
                ") but the weight has shape " + weight_->shape().to_string());
  }
  // One op for the product and the bias (nd::linear; without a bias, the product alone).
  const nd::NDArray y =
      nd::linear(flat, weight_->data(x.device()), bias_ ? bias_->data(x.device()) : nd::NDArray());
  return activate(y, activation_);
}

}  // namespace tandem::nn
