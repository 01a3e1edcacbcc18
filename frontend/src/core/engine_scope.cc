// The current engine of each thread, and the front end's per-engine state.
#include "tandem/nd/engine_scope.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/generator_registry.h"
#include "core/modes.h"
#include "core/storage_reuse.h"
#include "tandem/errors.h"

namespace tandem::nd {

using detail::throw_if_capturing;

namespace {

thread_local Engine* scoped_engine = nullptr;

// Open scopes per engine, over all threads: the front end's state on an engine (its default
// generator) is released when the last scope on it closes, before the owner can destroy it.
std::mutex scopes_mutex;
// Never destroyed: a scope may close in a static destructor.
std::unordered_map<Engine*, int>& open_scopes() {
  static auto* scopes = new std::unordered_map<Engine*, int>();
  return *scopes;
}

}  // namespace

Engine& current_engine() {
  if (scoped_engine != nullptr) return *scoped_engine;
  Engine& engine = Engine::get();
  detail::note_process_engine(engine);  // its arrays' storages may be parked for reuse
  return engine;
}

void waitall() {
  throw_if_capturing("waitall");
  current_engine().wait_all();
}

std::size_t reusable_bytes(Device device) {
  return detail::parked_bytes_on(device);
}

void waitall(std::chrono::milliseconds timeout) {
  throw_if_capturing("waitall");
  current_engine().wait_all(timeout);
}

EngineScope::EngineScope(Engine& engine) : previous_(scoped_engine), engine_(&engine) {
  detail::note_scope_opened(engine);
  try {
    std::lock_guard lock(scopes_mutex);
    ++open_scopes()[engine_];
  } catch (...) {
    detail::note_scope_closed(engine);
    throw;
  }
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
  // Before the owner can destroy the engine: the storages parked for reuse hold its vars.
  detail::note_scope_closed(*engine_);
}

void set_default_engine(const EngineConfig& config) {
  Engine* old = nullptr;
  try {
    old = &Engine::get();
  } catch (const Error&) {
    // No default engine can be made from the environment (a bad TANDEM_* value): it has no
    // arrays or generator, and the config given here is the way past that error.
  }
  if (old != nullptr) {
    // Storages parked for reuse hold vars of the old engine: free them first (a refusal below
    // only costs their reuse).
    detail::release_process_engine(*old);
    // Checked before the default generator is forgotten, so that a refusal changes nothing.
    const std::uint64_t own = random::detail::has_default_generator(*old) ? 1 : 0;
    const std::uint64_t alive = old->stats().vars_alive;
    if (alive > own) {
      throw Error("tandem: nd::set_default_engine: " + std::to_string(alive - own) +
                  " arrays (or random generators, or vars from new_var) of the current engine "
                  "are still alive; they would be left without their engine. Drop them (or let "
                  "them go out of scope) before replacing the engine, or use a private engine "
                  "with nd::EngineScope beside it");
    }
    random::detail::forget_default_generator(*old);
  }
  Engine::set_default(config);
}

void set_default_engine(EngineKind kind) {
  EngineConfig config = EngineConfig::from_env();
  config.kind = kind;
  set_default_engine(config);
}

}  // namespace tandem::nd
