// The initializers: random draws and constants on the CPU.
#include "tandem/nn/initializer.h"

#include <cmath>
#include <sstream>

#include "tandem/errors.h"
#include "tandem/nd/creation.h"

namespace tandem::nn {

RandomInitializer::RandomInitializer(std::optional<std::uint64_t> seed) {
  if (seed) generator_ = std::make_shared<nd::random::Generator>(*seed);
}

void RandomInitializer::check_floating(nd::DType dtype) const {
  if (dtype == nd::float32 || dtype == nd::float64) return;
  throw Error(std::string("tandem: ") + describe() + ": cannot fill a " +
              std::string(nd::dtype_name(dtype)) +
              " parameter with random values (float32 or float64 only); give the parameter a "
              "Constant initializer");
}

namespace {

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

nd::NDArray Uniform::create(const nd::Shape& shape, nd::DType dtype) const {
  check_floating(dtype);
  return nd::random::uniform(
      shape,
      {.low = -scale_, .high = scale_, .dtype = dtype, .device = cpu(), .generator = generator()});
}
std::shared_ptr<const Initializer> Uniform::clone() const {
  return std::make_shared<Uniform>(*this);
}
std::string Uniform::describe() const {
  return "Uniform(" + number(scale_) + ")";
}

nd::NDArray Normal::create(const nd::Shape& shape, nd::DType dtype) const {
  check_floating(dtype);
  return nd::random::normal(
      shape,
      {.mean = 0.0, .stddev = sigma_, .dtype = dtype, .device = cpu(), .generator = generator()});
}
std::shared_ptr<const Initializer> Normal::clone() const {
  return std::make_shared<Normal>(*this);
}
std::string Normal::describe() const {
  return "Normal(" + number(sigma_) + ")";
}

nd::NDArray Xavier::create(const nd::Shape& shape, nd::DType dtype) const {
  check_floating(dtype);
  if (shape.ndim() < 2) {
    throw Error("tandem: " + describe() + ": needs a weight of at least 2 dimensions, got " +
                std::to_string(shape.ndim()) + " (shape " + shape.to_string() +
                "); give 1-D parameters (biases) another initializer");
  }
  double receptive_field = 1.0;
  for (int axis = 2; axis < shape.ndim(); ++axis) {
    receptive_field *= static_cast<double>(shape[axis]);
  }
  const double fan_in = static_cast<double>(shape[1]) * receptive_field;
  const double fan_out = static_cast<double>(shape[0]) * receptive_field;
  const double factor = factor_ == Factor::avg  ? (fan_in + fan_out) / 2.0
                        : factor_ == Factor::in ? fan_in
                                                : fan_out;
  const double scale = std::sqrt(magnitude_ / factor);
  if (distribution_ == Distribution::uniform) {
    return nd::random::uniform(
        shape,
        {.low = -scale, .high = scale, .dtype = dtype, .device = cpu(), .generator = generator()});
  }
  return nd::random::normal(
      shape,
      {.mean = 0.0, .stddev = scale, .dtype = dtype, .device = cpu(), .generator = generator()});
}
std::shared_ptr<const Initializer> Xavier::clone() const {
  return std::make_shared<Xavier>(*this);
}
std::string Xavier::describe() const {
  const char* distribution = distribution_ == Distribution::uniform ? "uniform" : "gaussian";
  const char* factor = factor_ == Factor::avg ? "avg" : factor_ == Factor::in ? "in" : "out";
  return std::string("Xavier(") + distribution + ", " + factor + ", " + number(magnitude_) + ")";
}

nd::NDArray Constant::create(const nd::Shape& shape, nd::DType dtype) const {
  return nd::full(shape, value_, dtype, cpu());
}
std::shared_ptr<const Initializer> Constant::clone() const {
  return std::make_shared<Constant>(*this);
}
std::string Constant::describe() const {
  return "Constant(" + number(value_) + ")";
}

}  // namespace tandem::nn
