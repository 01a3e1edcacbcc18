// Automatic capture: an opt-in scope in which the engine finds a repeated window of pushes on
// its own and enters each repetition as a captured graph (tandem/graph.h) would be replayed,
// without the user calling capture().
//
//   tandem::AutoCapture scope(engine);    // this thread's pushes on `engine`, until the scope ends
//   for (int step = 0; step < 1000; ++step) {
//     engine.push([&, step] { advance(a, b, step); }, tandem::cpu(), {a}, {b}, {.name =
//     "advance"}); engine.push([&] { relax(b, a); }, tandem::cpu(), {b}, {a}, {.name = "relax"});
//   }
//   engine.wait_all();                    // a wait flushes: the buffered pushes are entered first
//
// Detection: a push's shape is its closure's type, device, props and read and write vars (in
// the order given). Once the last p pushes repeat the p before them, the window (p, rounded up
// to at least `min_window_ops`) is recorded from the next pushes and resolved into a plan once;
// from then on every push that has the shape the plan expects at its position is buffered,
// and a complete window is entered as the plan's units with the closures pushed this time.
//
// Semantics: those of the same pushes made eagerly at the moment the window (or the flush) is
// entered. A push whose shape does not match enters the buffered pushes one by one, in push
// order, then itself, and detection starts again; a push with bad input throws where an eager
// push would. A wait, delete_var, capture or replay on this thread, flush() and the end of the
// scope enter the buffered pushes first. Pushes are delayed by at most one window
// (`max_window_ops`); a thread other than this one sees them only once entered, so a thread that
// must wait for them synchronises with this one after a flush. Vars created per repetition
// (fresh arrays) never repeat, so such loops stay eager: use tandem::capture or hybridize.
// Has no effect on the naive engine, on pushes from inside ops, or inside a capture.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tandem/engine.h"

namespace tandem {

namespace detail {
class AutoCaptureState;
}

struct AutoCaptureOptions {
  // Windows shorter than this are taken several times over: a window is entered as one unit per
  // run of CPU ops, which holds every var the run touches, so it must span many ops to pay.
  std::size_t min_window_ops = 1024;
  // The longest window looked for, and so the most pushes ever buffered.
  std::size_t max_window_ops = 8192;
};

struct AutoCaptureStats {
  std::uint64_t pushes_seen = 0;
  std::uint64_t windows_entered = 0;  // entered from a plan, with their new closures
  std::uint64_t ops_in_windows = 0;
  std::uint64_t fallbacks = 0;  // buffered windows entered one by one after a mismatch
  std::uint64_t flushes = 0;    // partial windows entered one by one by a sync point
};

// Opens automatic capture for this thread's pushes on `engine` (see above). Not copyable; one
// per thread at a time, destroyed on the thread that opened it, and before the engine. Misuse
// is logged, not fatal: an engine destroyed first enters the buffered pushes itself, and one
// destroyed on another thread enters them there (the opening thread may then open another).
class AutoCapture {
 public:
  explicit AutoCapture(Engine& engine, AutoCaptureOptions options = {});
  ~AutoCapture();
  AutoCapture(const AutoCapture&) = delete;
  AutoCapture& operator=(const AutoCapture&) = delete;

  // Enters every buffered push now (one by one, in push order).
  void flush();
  AutoCaptureStats stats() const;

 private:
  detail::AutoCaptureState* state_ = nullptr;
};

}  // namespace tandem
