// CaptureWindow: the front end's side of an engine capture (tandem/graph.h) that records
// front-end ops, as hybridize's first call per input signature does.
//
// While a window is open on a thread, that thread's front-end ops are recorded into a graph
// that replays them many times, which changes what storage may do:
// - An array created and dropped inside the window is a temporary the graph owns: its memory
//   must stay with it until the graph is destroyed. So no early free op is queued for it (the
//   graph would free its memory at every replay), a device block's free is not announced to
//   the pool (it comes back only when the graph goes), and no cache of dead arrays' storage
//   may be consulted or fed (a graph-owned or captured var must never be handed to an eager
//   array): storage code tests capturing_on_this_thread() before any such reuse.
// - Dropping the last handle of an array created before the window cannot be recorded (the
//   engine refuses to delete, inside a capture, a var the graph would run on): that release is
//   deferred to the window's end.
// - A sync point (wait_to_read, to_vector, printing, waitall) cannot wait for ops that are
//   only being recorded: it throws tandem::Error naming the call (throw_if_capturing).
// The window is the capture mode of the thread's mode stack (core/modes.h): the core asks the
// stack, never this file.
#pragma once

#include <vector>

#include "core/modes.h"
#include "core/storage.h"

namespace tandem::nd::detail {

class CaptureWindow final : public Mode {
 public:
  // Throws tandem::Error when a window is already open on this thread (windows do not nest).
  CaptureWindow();
  // Closes the window, then hands the deferred releases to the engine.
  ~CaptureWindow();
  CaptureWindow(const CaptureWindow&) = delete;
  CaptureWindow& operator=(const CaptureWindow&) = delete;

  // Keeps `storage` (no handle left, its var created before the window) for deletion at the
  // window's end.
  void defer_deletion(Storage* storage) override;

 private:
  std::vector<Storage*> deferred_;
  Mode* previous_ = nullptr;
};

}  // namespace tandem::nd::detail
