// BatchNorm: shapes inferred at the first forward, the work done by nd::batch_norm.
#include "tandem/nn/batch_norm.h"

#include "tandem/errors.h"
#include "tandem/nd/network.h"

namespace tandem::nn {

std::shared_ptr<Block> BatchNorm::clone_structure() const {
  return std::make_shared<BatchNorm>(options_);
}

BatchNorm::BatchNorm(BatchNormOptions options) : options_(options) {
  const nd::Shape channels{options.in_channels};
  const auto ones = std::make_shared<Ones>();
  const auto zeros = std::make_shared<Zeros>();
  gamma_ = register_parameter("gamma", channels, {.dtype = options.dtype, .init = ones});
  beta_ = register_parameter("beta", channels, {.dtype = options.dtype, .init = zeros});
  running_mean_ = register_parameter(
      "running_mean", channels, {.dtype = options.dtype, .grad_req = GradReq::null, .init = zeros});
  running_var_ = register_parameter(
      "running_var", channels, {.dtype = options.dtype, .grad_req = GradReq::null, .init = ones});
}

nd::NDArray BatchNorm::forward(const nd::NDArray& x) {
  if (x.ndim() < 2) {
    throw Error("tandem: BatchNorm '" + gamma_->name() +
                "': needs an input of shape (batch, channels, ...), got " + x.shape().to_string());
  }
  const nd::Shape channels{x.shape()[1]};
  for (Parameter* parameter :
       {gamma_.get(), beta_.get(), running_mean_.get(), running_var_.get()}) {
    if (!parameter->shape_known()) parameter->set_shape(channels);
    if (parameter->shape() != channels) {
      throw Error("tandem: BatchNorm '" + parameter->name() + "': the input has " +
                  std::to_string(channels[0]) + " channels (shape " + x.shape().to_string() +
                  ") but the parameter has shape " + parameter->shape().to_string());
    }
  }
  const Device device = x.device();
  return nd::batch_norm(x, gamma_->data(device), beta_->data(device), running_mean_->data(device),
                        running_var_->data(device), options_.momentum, options_.epsilon);
}

}  // namespace tandem::nn
