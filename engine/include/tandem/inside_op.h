// inside_op(): whether the calling thread is running an op's function right now.
//
//   if (!tandem::inside_op()) wait_for_pending_frees();   // may block: not from an op
//
// An op's function (a CPU op's body, an accelerator op's launch function, a delete_var deleter)
// must never block until other ops have run: the op it would wait for may be queued behind this
// one, or be this one. The engine's own waits throw DeadlockError there; code outside the engine
// that may block on the engine's progress (an allocation that waits for queued frees) asks this
// first and does not wait when it is true.
#pragma once

namespace tandem {

bool inside_op() noexcept;

}  // namespace tandem
