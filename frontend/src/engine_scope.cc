// The current engine of each thread, and the front end's per-engine state.
#include "tandem/nd/engine_scope.h"

#include <mutex>
#include <unordered_map>

#include "generator_registry.h"
#include "tandem/errors.h"

namespace tandem::nd {

namespace {

thread_local Engine* scoped_engine = nullptr;

// Open scopes per engine, over all threads: the front end's state on an engine (its default
// generator) is released when the last scope on it closes, before the owner can destroy it.
std::mutex scopes_mutex;
std::unordered_map<Engine*, int>& open_scopes() {
  static std::unordered_map<Engine*, int> scopes;
  return scopes;
}

}  // namespace

Engine& current_engine() {
  return scoped_engine != nullptr ? *scoped_engine : Engine::get();
}

void waitall() {
  current_engine().wait_all();
}

EngineScope::EngineScope(Engine& engine) : previous_(scoped_engine), engine_(&engine) {
  std::lock_guard lock(scopes_mutex);
  ++open_scopes()[engine_];
  scoped_engine = engine_;
}

EngineScope::~EngineScope() {
  scoped_engine = previous_;
  bool last = false;
  {
    std::lock_guard lock(scopes_mutex);
    auto it = open_scopes().find(engine_);
    if (it != open_scopes().end() && --it->second == 0) {
      open_scopes().erase(it);
      last = true;
    }
  }
  if (last) random::detail::forget_default_generator(*engine_);
}

void set_default_engine(const EngineConfig& config) {
  try {
    random::detail::forget_default_generator(Engine::get());
  } catch (const Error&) {
    // No default engine can be made from the environment (a bad TANDEM_* value): it has no
    // generator to forget, and the config given here is the way past that error.
  }
  Engine::set_default(config);
}

void set_default_engine(EngineKind kind) {
  EngineConfig config = EngineConfig::from_env();
  config.kind = kind;
  set_default_engine(config);
}

}  // namespace tandem::nd
