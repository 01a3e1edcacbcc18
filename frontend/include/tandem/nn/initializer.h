// Initializers: how a parameter's first values are drawn (Gluon's mx.init).
//
//   net.initialize(nn::Xavier());                        // every weight Xavier, biases zeros
//   net.initialize(nn::Normal(0.01), {tandem::sim(0)});  // N(0, 0.01^2) on sim(0)
//   nn::Uniform(0.07, /*seed=*/42)                       // its own stream: the same values
//                                                        // whatever else draws random numbers
//
// Values are drawn on the CPU (float32 or float64) and then copied to every device a parameter
// lives on, so the copies of a data-parallel parameter start equal. Without a seed an
// initializer draws from the engine's default generator, so nd::random::seed(s) before
// initialize() makes the values reproducible; with a seed it owns a generator of its own.
// A parameter may carry its own initializer (a Dense bias: Zeros; BatchNorm's gamma: Ones),
// which wins over the one passed to initialize().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tandem/nd/ndarray.h"
#include "tandem/nd/random.h"

namespace tandem::nn {

class Initializer {
 public:
  virtual ~Initializer() = default;
  // A new array of `shape` and `dtype` on the CPU holding the initial values. Throws
  // tandem::Error for a dtype the initializer cannot fill (random ones need a floating dtype).
  virtual nd::NDArray create(const nd::Shape& shape, nd::DType dtype) const = 0;
  // A copy that draws from the same stream (used when a parameter's initialization is
  // deferred to its first forward).
  virtual std::shared_ptr<const Initializer> clone() const = 0;
  // "Xavier(uniform, avg, 3)", for messages.
  virtual std::string describe() const = 0;
};

// Draws from its own generator when given a seed, else from the default generator.
class RandomInitializer : public Initializer {
 public:
  explicit RandomInitializer(std::optional<std::uint64_t> seed);

 protected:
  nd::random::Generator* generator() const { return generator_.get(); }
  // Throws tandem::Error unless `dtype` is float32 or float64.
  void check_floating(nd::DType dtype) const;

 private:
  std::shared_ptr<nd::random::Generator> generator_;  // null: the default generator
};

// U(-scale, scale); Gluon's default (scale 0.07).
class Uniform : public RandomInitializer {
 public:
  explicit Uniform(double scale = 0.07, std::optional<std::uint64_t> seed = std::nullopt)
      : RandomInitializer(seed), scale_(scale) {}
  nd::NDArray create(const nd::Shape& shape, nd::DType dtype) const override;
  std::shared_ptr<const Initializer> clone() const override;
  std::string describe() const override;

 private:
  double scale_;
};

// N(0, sigma^2).
class Normal : public RandomInitializer {
 public:
  explicit Normal(double sigma = 0.01, std::optional<std::uint64_t> seed = std::nullopt)
      : RandomInitializer(seed), sigma_(sigma) {}
  nd::NDArray create(const nd::Shape& shape, nd::DType dtype) const override;
  std::shared_ptr<const Initializer> clone() const override;
  std::string describe() const override;

 private:
  double sigma_;
};

// Glorot and Bengio's initializer, with MXNet's parameters. For a weight of shape
// (out, in, k...) with receptive field r = prod(k...): fan_in = in * r, fan_out = out * r; the
// factor is their mean (avg), fan_in (in) or fan_out (out); scale = sqrt(magnitude / factor).
// uniform draws U(-scale, scale), gaussian draws N(0, scale^2). Needs at least 2 dimensions.
class Xavier : public RandomInitializer {
 public:
  enum class Distribution { uniform, gaussian };
  enum class Factor { avg, in, out };
  explicit Xavier(Distribution distribution = Distribution::uniform, Factor factor = Factor::avg,
                  double magnitude = 3.0, std::optional<std::uint64_t> seed = std::nullopt)
      : RandomInitializer(seed),
        distribution_(distribution),
        factor_(factor),
        magnitude_(magnitude) {}
  nd::NDArray create(const nd::Shape& shape, nd::DType dtype) const override;
  std::shared_ptr<const Initializer> clone() const override;
  std::string describe() const override;

 private:
  Distribution distribution_;
  Factor factor_;
  double magnitude_;
};

// Every value `value`.
class Constant : public Initializer {
 public:
  explicit Constant(double value) : value_(value) {}
  nd::NDArray create(const nd::Shape& shape, nd::DType dtype) const override;
  std::shared_ptr<const Initializer> clone() const override;
  std::string describe() const override;

 private:
  double value_;
};

class Zeros : public Constant {
 public:
  Zeros() : Constant(0.0) {}
};

class Ones : public Constant {
 public:
  Ones() : Constant(1.0) {}
};

}  // namespace tandem::nn
