// Random arrays from a counter-based generator (Philox4x32-10).
//
//   nd::random::seed(42);
//   auto x = nd::random::uniform({2000, 2000});                    // U[0, 1), float32, cpu(0)
//   auto w = nd::random::normal({512, 256}, {.stddev = 0.01});     // N(0, 0.01^2)
//
// A generator's state (seed and stream position) is itself an engine var: every draw is an op
// that writes it, so draws happen in the order they were made, whatever the engine runs in
// parallel, and a seed gives the same arrays on every engine kind, device and thread count. Each
// engine has a default generator (seed 0 until reseeded); a Generator object is an independent
// stream. A draw consumes whole Philox blocks (4 float32 or 2 float64 values each), so one draw
// of 24 float32 values equals two draws of 12, but not two of 10.
#pragma once

#include <cstdint>
#include <memory>

#include "tandem/nd/ndarray.h"

namespace tandem::nd::random {

namespace detail {
struct GeneratorState;
}

// Where a generator's stream stands: its seed and the next Philox block (a checkpoint of the
// random state; Generator::snapshot / restore).
struct GeneratorSnapshot {
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;
};

class Generator {
 public:
  // A new stream on the current engine (see nd::EngineScope).
  explicit Generator(std::uint64_t seed = 0);
  Generator(std::uint64_t seed, Engine& engine);

  // Restarts the stream from `seed`, after every draw made so far (an op on the generator's var).
  void seed(std::uint64_t seed);
  // Where the stream stands after every draw queued so far. A sync point: waits for those
  // draws (and rethrows an error one of them raised).
  GeneratorSnapshot snapshot() const;
  // Puts the stream where `snapshot` says, after every draw made so far (an op on the
  // generator's var): the draws that follow repeat those that followed the snapshot.
  void restore(const GeneratorSnapshot& snapshot);
  Engine& engine() const;
  Var var() const;
  detail::GeneratorState& state() const { return *state_; }

 private:
  std::shared_ptr<detail::GeneratorState> state_;
};

// The current engine's default generator.
Generator& default_generator();
// Reseeds the current engine's default generator.
void seed(std::uint64_t seed);

struct UniformOptions {
  double low = 0.0;
  double high = 1.0;
  DType dtype = float32;  // float32 or float64
  Device device = cpu();
  Generator* generator = nullptr;  // nullptr: the default generator
};
struct NormalOptions {
  double mean = 0.0;
  double stddev = 1.0;
  DType dtype = float32;
  Device device = cpu();
  Generator* generator = nullptr;
};

NDArray uniform(Shape shape, const UniformOptions& options = {});
NDArray uniform(Shape shape, Device device);
NDArray uniform(double low, double high, Shape shape, Device device = cpu());
NDArray normal(Shape shape, const NormalOptions& options = {});
NDArray normal(Shape shape, Device device);
NDArray normal(double mean, double stddev, Shape shape, Device device = cpu());

}  // namespace tandem::nd::random
