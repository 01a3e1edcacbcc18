// Which engine the front end uses, and waiting for all of it.
//
//   nd::waitall();                      // waits for every op; rethrows the first unseen error
//
//   auto engine = tandem::Engine::create({.kind = tandem::EngineKind::naive});
//   {
//     nd::EngineScope scope(*engine);   // arrays created by this thread now use *engine
//     auto x = nd::ones({2, 2}) + 1;    // runs inline: the naive engine is synchronous
//   }                                   // arrays of *engine should be gone before *engine is
//
// An array remembers its engine; an op on arrays of two different engines throws
// tandem::Error. Without a scope the front end uses tandem::Engine::get(). The front end's state
// on a scoped engine (its default random generator) is released when the last scope on that
// engine closes, so a later scope on it starts again from seed 0.
//
// An array that outlives its private engine can still be dropped safely: the engine hands its
// vars to a stand-in when it is destroyed (see tandem/engine.h, Lifetime) and logs an error;
// any other use (an op on it, a wait, reading it back) throws tandem::Error naming the array
// and the destroyed engine. Arrays of the process-wide engine may
// live anywhere, namespace scope included: that engine outlives them all.
#pragma once

#include <chrono>
#include <cstddef>

#include "tandem/engine.h"

namespace tandem::nd {

// The engine new arrays are created on by this thread.
Engine& current_engine();

// Waits until every op pushed so far on the current engine has finished; rethrows the first
// error no sync point has thrown yet.
void waitall();
// The same, giving up after `timeout` with tandem::TimeoutError (which says what it waits for).
void waitall(std::chrono::milliseconds timeout);

// Bytes of dead arrays' memory on `device` that the front end keeps, block and var together, for
// the next new array of the same size (stream-ordered reuse: a never-syncing loop then cycles
// through a few blocks instead of allocating one per iteration; docs/design.md). A device pool
// counts them as in use, and so does this count: a device block at its pool size class (a
// 4-byte array holds 512 bytes). An allocation that finds the device short frees them first.
std::size_t reusable_bytes(Device device);

class EngineScope {
 public:
  explicit EngineScope(Engine& engine);
  ~EngineScope();
  EngineScope(const EngineScope&) = delete;
  EngineScope& operator=(const EngineScope&) = delete;

 private:
  Engine* previous_;
  Engine* engine_;
};

// Replaces the process-wide engine (tandem::Engine::set_default) after waiting for the old one
// and releasing the front end's state on it (its default random generator). Throws
// tandem::Error naming how many arrays (vars) of the old engine are still alive, and changes
// nothing, unless they are all gone. Prefer this over Engine::set_default once the front end
// has been used.
void set_default_engine(const EngineConfig& config);
void set_default_engine(EngineKind kind);

}  // namespace tandem::nd
