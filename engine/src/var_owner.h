// VarOwner: an engine's bookkeeping of its vars: which engine a var belongs to, how many of its
// vars are alive, and which Engine serves them now.
//
// Invariants:
// - Every var state points at the VarOwner of the engine whose new_var made it (set by new_var,
//   before the handle exists). A var is *live* from new_var until its delete_var call;
//   `live_vars` counts them.
// - A VarOwner lives as long as its engine or any of its live vars, whichever is longer. An
//   engine destroyed while vars are live hands its VarOwner to a stand-in engine (engine.cc)
//   that never dies; `engine` then names the stand-in, so what the vars' holders do later
//   (delete them, mostly) goes to an engine that still exists.
// - A handle whose generation matches its state's is live, so its owner is alive: comparing
//   owner pointers is exact (a dead owner's address may be reused, but no live var points at
//   it any more).
#pragma once

#include <atomic>
#include <cstdint>

namespace tandem {
class Engine;
}

namespace tandem::detail {

struct VarOwner {
  // 1, 2, 3... in creation order over the process: engines' names in error messages.
  const std::uint64_t engine_number;
  std::atomic<std::int64_t> live_vars{0};
  std::atomic<Engine*> engine{nullptr};
  // Set (before `engine` names the stand-in) when the engine was destroyed with live vars.
  std::atomic<bool> retired{false};

  VarOwner();
  VarOwner(const VarOwner&) = delete;
  VarOwner& operator=(const VarOwner&) = delete;

 private:
  static std::uint64_t next_engine_number();
};

}  // namespace tandem::detail
