// Parameter: copies per device, deferred initialization, gradients.
#include "tandem/nn/parameter.h"

#include <algorithm>
#include <atomic>

#include "tandem/errors.h"
#include "tandem/nd/creation.h"

namespace tandem::nn {

namespace {

std::string device_list(const std::vector<Device>& devices) {
  std::string text;
  for (const Device& device : devices) {
    if (!text.empty()) text += ", ";
    text += to_string(device);
  }
  return text;
}

}  // namespace

Parameter::Parameter(std::string name, nd::Shape shape, ParameterOptions options)
    : name_(std::move(name)), shape_(shape), options_(std::move(options)) {
  for (const std::int64_t dim : shape_) {
    if (dim < 0) {
      throw Error("tandem: Parameter '" + name_ + "': negative dimension in shape " +
                  shape_.to_string() + " (0 marks a dimension to infer)");
    }
  }
}

bool Parameter::shape_known() const {
  return std::none_of(shape_.begin(), shape_.end(), [](std::int64_t dim) { return dim == 0; });
}

void Parameter::set_shape(const nd::Shape& shape) {
  bool fits = shape.ndim() == shape_.ndim();
  for (int axis = 0; fits && axis < shape.ndim(); ++axis) {
    fits = shape[axis] > 0 && (shape_[axis] == 0 || shape_[axis] == shape[axis]);
  }
  if (!fits) {
    throw Error("tandem: Parameter '" + name_ + "': shape " + shape_.to_string() +
                " cannot become " + shape.to_string() +
                " (only its 0 dimensions are inferred); check the input's shape");
  }
  shape_ = shape;
  if (pending_init_) {
    const std::shared_ptr<const Initializer> init = std::move(pending_init_);
    pending_init_ = nullptr;
    create_copies(*init);
  }
}

void Parameter::check_devices(const char* call, const std::vector<Device>& devices) const {
  if (devices.empty()) {
    throw Error("tandem: Parameter '" + name_ + "': " + call + " with no device");
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (std::find(devices.begin(), devices.begin() + static_cast<std::ptrdiff_t>(i), devices[i]) !=
        devices.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw Error("tandem: Parameter '" + name_ + "': the device " + to_string(devices[i]) +
                  " appears twice in " + call + "'s devices (" + device_list(devices) + ")");
    }
  }
}

void Parameter::reset_devices(const std::vector<Device>& devices) {
  check_devices("reset_devices", devices);
  if (!initialized()) {
    devices_ = devices;
    return;
  }
  auto paused = autograd::pause();
  const nd::NDArray values = data_.front();
  std::vector<nd::NDArray> copies;
  copies.reserve(devices.size());
  for (const Device& device : devices) copies.push_back(values.copyto(device));
  devices_ = devices;
  data_ = std::move(copies);
  attach_gradients();
}

void Parameter::initialize(const Initializer& init, const std::vector<Device>& devices,
                           bool force_reinit) {
  check_devices("initialize", devices);
  if ((initialized() || deferred()) && !force_reinit) return;
  data_.clear();
  devices_ = devices;
  const Initializer& chosen = options_.init ? *options_.init : init;
  if (!shape_known()) {
    pending_init_ = chosen.clone();
    return;
  }
  pending_init_ = nullptr;
  create_copies(chosen);
}

void Parameter::create_copies(const Initializer& init) {
  // The draws read no recorded array, and the copies are leaves: nothing to record.
  auto paused = autograd::pause();
  const nd::NDArray values = init.create(shape_, options_.dtype);
  std::vector<nd::NDArray> copies;
  copies.reserve(devices_.size());
  for (const Device& device : devices_) copies.push_back(values.copyto(device));
  data_ = std::move(copies);
  attach_gradients();
}

namespace {

std::atomic<std::uint64_t>& handles_epoch_counter() {
  static std::atomic<std::uint64_t> epoch{0};
  return epoch;
}

}  // namespace

std::uint64_t Parameter::handles_epoch() {
  return handles_epoch_counter().load(std::memory_order_acquire);
}

void Parameter::attach_gradients() {
  // Every caller has just given data_ new handles.
  ++handles_generation_;
  handles_epoch_counter().fetch_add(1, std::memory_order_acq_rel);
  if (options_.grad_req == GradReq::null) return;
  if (!gradient_ready_) gradient_ready_ = std::make_shared<GradientReadyCallback>();  // moved from
  gradient_deliveries_ = std::make_shared<std::vector<std::atomic<std::uint64_t>>>(data_.size());
  for (std::size_t i = 0; i < data_.size(); ++i) {
    data_[i].attach_grad(options_.grad_req);
    autograd::add_gradient_ready_hook(
        data_[i],
        [callback = gradient_ready_, deliveries = gradient_deliveries_, i](const nd::NDArray&) {
          (*deliveries)[i].fetch_add(1, std::memory_order_relaxed);
          if (*callback) (*callback)(i);
        });
  }
}

std::uint64_t Parameter::gradient_deliveries(std::size_t copy) const {
  if (gradient_deliveries_ == nullptr || copy >= gradient_deliveries_->size()) {
    throw Error("tandem: Parameter '" + name_ + "': gradient_deliveries(" + std::to_string(copy) +
                "): the parameter has " +
                std::to_string(gradient_deliveries_ ? gradient_deliveries_->size() : 0) +
                " copies with a gradient");
  }
  return (*gradient_deliveries_)[copy].load(std::memory_order_relaxed);
}

void Parameter::set_gradient_ready_callback(GradientReadyCallback callback) {
  if (!gradient_ready_) {  // moved from
    gradient_ready_ = std::make_shared<GradientReadyCallback>();
  }
  *gradient_ready_ = std::move(callback);
}

void Parameter::throw_unavailable(const char* what) const {
  if (deferred()) {
    throw Error("tandem: Parameter '" + name_ + "': " + what + " is not available yet: its shape " +
                shape_.to_string() +
                " is inferred at the first forward (run the network on an input first)");
  }
  throw Error("tandem: Parameter '" + name_ + "': " + what +
              " of a parameter that is not initialized; call initialize() on it or on its "
              "network first");
}

nd::NDArray Parameter::data(Device device) const {
  if (!initialized()) throw_unavailable("data");
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == device) return data_[i];
  }
  throw Error("tandem: Parameter '" + name_ + "' has no copy on " + to_string(device) +
              "; it was initialized on " + device_list(devices_) +
              " (initialize the network on the input's device, or move the input)");
}

nd::NDArray Parameter::data() const {
  if (!initialized()) throw_unavailable("data");
  if (data_.size() != 1) {
    throw Error("tandem: Parameter '" + name_ + "' has copies on " + device_list(devices_) +
                "; say which one: data(device)");
  }
  return data_[0];
}

nd::NDArray Parameter::grad(Device device) const {
  if (options_.grad_req == GradReq::null) {
    throw Error("tandem: Parameter '" + name_ + "' has grad_req null: it has no gradient");
  }
  return data(device).grad();
}

std::vector<nd::NDArray> Parameter::list_data() const {
  if (!initialized()) throw_unavailable("list_data");
  return data_;
}

std::vector<nd::NDArray> Parameter::list_grad() const {
  if (!initialized()) throw_unavailable("list_grad");
  if (options_.grad_req == GradReq::null) {
    throw Error("tandem: Parameter '" + name_ + "' has grad_req null: it has no gradient");
  }
  std::vector<nd::NDArray> grads;
  grads.reserve(data_.size());
  for (const nd::NDArray& copy : data_) grads.push_back(copy.grad());
  return grads;
}

void Parameter::set_data(const nd::NDArray& value) {
  if (!initialized()) throw_unavailable("set_data");
  if (value.shape() != shape_ || value.dtype() != options_.dtype) {
    throw Error("tandem: Parameter '" + name_ + "': set_data with a " +
                std::string(nd::dtype_name(value.dtype())) + " array of shape " +
                value.shape().to_string() + "; the parameter is " +
                std::string(nd::dtype_name(options_.dtype)) + " of shape " + shape_.to_string());
  }
  auto paused = autograd::pause();
  for (const nd::NDArray& copy : data_) value.copyto(copy);
}

void Parameter::zero_grad() {
  if (options_.grad_req == GradReq::null || !initialized()) return;
  auto paused = autograd::pause();
  for (const nd::NDArray& copy : data_) copy.grad().assign(0.0);
}

void Parameter::set_grad_req(GradReq grad_req) {
  if (grad_req == options_.grad_req) return;
  options_.grad_req = grad_req;
  if (!initialized()) return;
  // Fresh handles: the old ones keep their gradient, the new ones have the new request.
  for (nd::NDArray& copy : data_) copy = copy.detach();
  attach_gradients();
}

void Parameter::cast(nd::DType dtype) {
  if (dtype == options_.dtype) return;
  options_.dtype = dtype;
  if (!initialized()) return;
  auto paused = autograd::pause();
  for (nd::NDArray& copy : data_) copy = copy.astype(dtype);
  attach_gradients();
}

}  // namespace tandem::nn
