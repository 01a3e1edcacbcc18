// Random arrays: each draw is an op that writes both the generator's var (it advances the
// stream) and the new array's var.
#include "tandem/nd/random.h"

#include <cmath>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/access.h"
#include "core/checks.h"
#include "core/generator_registry.h"
#include "core/kernels.h"
#include "core/lazy_view.h"
#include "core/modes.h"
#include "core/op_definition.h"
#include "tandem/errors.h"
#include "tandem/nd/engine_scope.h"
#include "tandem/ops/philox.h"

namespace tandem::nd::random {

namespace detail {

GeneratorState::~GeneratorState() {
  if (engine == nullptr) return;
  try {
    // Through the var: the generator may outlive the Engine object (see nd::detail::release).
    Engine::owner(var).delete_var(var, [stream = stream] { delete stream; });
  } catch (...) {
    // Leak rather than free a stream an op may still use.
  }
}

namespace {

std::mutex registry_mutex;
// Never destroyed: static destructors may draw random numbers after it would have been.
std::unordered_map<Engine*, std::unique_ptr<Generator>>& registry() {
  static auto* generators = new std::unordered_map<Engine*, std::unique_ptr<Generator>>();
  return *generators;
}

}  // namespace

void forget_default_generator(Engine& engine) {
  std::unique_ptr<Generator> generator;
  {
    std::lock_guard lock(registry_mutex);
    auto it = registry().find(&engine);
    if (it == registry().end()) return;
    generator = std::move(it->second);
    registry().erase(it);
  }
}

bool has_default_generator(Engine& engine) {
  std::lock_guard lock(registry_mutex);
  return registry().contains(&engine);
}

}  // namespace detail

Generator::Generator(std::uint64_t seed) : Generator(seed, current_engine()) {}

Generator::Generator(std::uint64_t seed, Engine& engine)
    : state_(std::make_shared<detail::GeneratorState>()) {
  state_->var = engine.new_var();
  state_->stream = new detail::PhiloxStream{seed, 0};
  state_->engine = &engine;
}

void Generator::seed(std::uint64_t seed) {
  detail::PhiloxStream* stream = state_->stream;
  state_->engine->push(
      [stream, seed] {
        *stream = detail::PhiloxStream{seed, 0};
      },
      cpu(), {}, {state_->var}, {.name = "random.seed"});
}

GeneratorSnapshot Generator::snapshot() const {
  state_->engine->wait_for_var(state_->var);
  return {state_->stream->seed, state_->stream->counter};
}

void Generator::restore(const GeneratorSnapshot& snapshot) {
  detail::PhiloxStream* stream = state_->stream;
  state_->engine->push(
      [stream, snapshot] {
        *stream = detail::PhiloxStream{snapshot.seed, snapshot.counter};
      },
      cpu(), {}, {state_->var}, {.name = "random.restore"});
}

Engine& Generator::engine() const {
  return *state_->engine;
}

Var Generator::var() const {
  return state_->var;
}

Generator& default_generator() {
  Engine& engine = current_engine();
  std::lock_guard lock(detail::registry_mutex);
  auto& slot = detail::registry()[&engine];
  if (!slot) slot = std::make_unique<Generator>(0, engine);
  return *slot;
}

void seed(std::uint64_t seed) {
  default_generator().seed(seed);
}

namespace {

enum class Distribution { uniform, normal };

// A draw advances the generator at launch by the Philox blocks it consumes (what the kernels
// return, known before they run), so the next draw (on any device) can continue the stream
// while this one is still queued on an accelerator. This is no exception to the rule that a
// launch function never touches the memory behind its vars (kernels.h): the generator's state
// is host memory that only op bodies touch, never stream work, and the engine runs those one at
// a time, in push order, for the generator's var.
void push_draw(Engine& engine, const char* op, Distribution distribution,
               detail::PhiloxStream* stream, Var generator, const NDArray& out, double a,
               double b) {
  const nd::detail::DenseRef data = nd::detail::dense_ref(out);
  const std::int64_t n = out.size();
  const DType dtype = out.dtype();
  engine.push(
      [stream, data, n, dtype, distribution, a, b](RunContext& ctx) {
        const auto view = ops::contiguous_view(data.resolve(), dtype, Shape{n});
        const ops::Kernels& kernels = nd::detail::kernels(ctx);
        stream->counter +=
            distribution == Distribution::uniform
                ? kernels.random_uniform(ctx.stream(), view, a, b, stream->seed, stream->counter)
                : kernels.random_normal(ctx.stream(), view, a, b, stream->seed, stream->counter);
      },
      out.device(), {}, {generator, out.var()}, {.name = op});
}

// uniform: [low, high), both finite, low <= high. normal: mean and stddev finite, stddev >= 0.
void check_parameters(const char* op, Distribution distribution, double a, double b) {
  const std::string values = "(got " + std::to_string(a) + ", " + std::to_string(b) + ")";
  if (distribution == Distribution::uniform) {
    if (!std::isfinite(a) || !std::isfinite(b)) {
      throw Error(std::string("tandem: ") + op + ": low and high must be finite " + values);
    }
    if (a > b) {
      throw Error(std::string("tandem: ") + op + ": low must not exceed high " + values +
                  "; swap them");
    }
    return;
  }
  if (!std::isfinite(a) || !std::isfinite(b)) {
    throw Error(std::string("tandem: ") + op + ": mean and stddev must be finite " + values);
  }
  if (b < 0) {
    throw Error(std::string("tandem: ") + op + ": stddev must be at least 0 " + values);
  }
}

NDArray draw(const char* op, Distribution distribution, const Shape& shape, double a, double b,
             DType dtype, Device device, Generator* generator) {
  nd::detail::check_floating(op, dtype);
  check_parameters(op, distribution, a, b);
  Generator& source = generator != nullptr ? *generator : default_generator();
  Engine& engine = current_engine();
  if (&source.engine() != &engine) {
    throw Error(std::string("tandem: ") + op +
                ": the generator belongs to another engine than the current one");
  }
  if (nd::detail::ops_observed())
    nd::detail::note_opaque_op(op,
                               "a random draw would be saved as a constant (export in predict "
                               "mode, where dropout draws nothing)");
  NDArray out = nd::detail::allocate_array(engine, shape, dtype, device, op);
  push_draw(engine, op, distribution, source.state().stream, source.var(), out, a, b);
  return out;
}

}  // namespace

NDArray uniform(Shape shape, const UniformOptions& options) {
  return draw("random.uniform", Distribution::uniform, shape, options.low, options.high,
              options.dtype, options.device, options.generator);
}

NDArray uniform(Shape shape, Device device) {
  return uniform(shape, UniformOptions{.device = device});
}

NDArray uniform(double low, double high, Shape shape, Device device) {
  return uniform(shape, UniformOptions{.low = low, .high = high, .device = device});
}

NDArray normal(Shape shape, const NormalOptions& options) {
  return draw("random.normal", Distribution::normal, shape, options.mean, options.stddev,
              options.dtype, options.device, options.generator);
}

NDArray normal(Shape shape, Device device) {
  return normal(shape, NormalOptions{.device = device});
}

NDArray normal(double mean, double stddev, Shape shape, Device device) {
  return normal(shape, NormalOptions{.mean = mean, .stddev = stddev, .device = device});
}

}  // namespace tandem::nd::random

namespace tandem::nd::detail {
// No op of this file has a record yet (core/op_definition.h).
TANDEM_OP_DEFINITIONS(random)
}  // namespace tandem::nd::detail
