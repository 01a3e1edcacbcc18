// The default random generator of each engine, created on first use.
#pragma once

#include "tandem/nd/random.h"

namespace tandem::nd::random::detail {

// The generator's var lives in an engine var; it must be deleted while that engine is alive.
// Called when the last EngineScope on `engine` closes and before the default engine is replaced.
void forget_default_generator(Engine& engine);
// Whether `engine` has a default generator (which holds one of its vars).
bool has_default_generator(Engine& engine);

// The state behind a Generator handle. `stream` is read and advanced only by ops that write
// `var`, so draws happen in push order; it is freed by the var's deleter, after the last of them.
struct PhiloxStream {
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;  // the next Philox block of the stream
};

struct GeneratorState {
  Engine* engine = nullptr;
  Var var;
  PhiloxStream* stream = nullptr;

  GeneratorState() = default;
  GeneratorState(const GeneratorState&) = delete;
  GeneratorState& operator=(const GeneratorState&) = delete;
  ~GeneratorState();
};

}  // namespace tandem::nd::random::detail
