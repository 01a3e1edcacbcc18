// StreamChooser: the one place where a ready accelerator op picks the stream it launches on.
//
// - An op of a copy or comm queue goes to that queue's stream (one per device).
// - A compute op follows its inputs: when a var it accesses was last written by device work on
//   a compute stream of the same device, it goes to that stream. A dependency chain then stays
//   on one stream, where stream order alone keeps it in order, instead of paying a cross-stream
//   event wait per op (EngineStats::cross_stream_waits counts those that remain).
// - Any other compute op (no fenced input on this device) goes round-robin over the compute
//   streams, so independent ops land on different streams and overlap.
//
// Not thread-safe: each launcher (one per device, or the naive engine's pushing thread) has its
// own chooser.
#pragma once

#include "tandem/accel/accelerator.h"
#include "tandem/detail/op_record.h"

namespace tandem::detail {

class StreamChooser {
 public:
  Stream& choose(Accelerator& device, const OpRecord& op);

 private:
  // The compute stream of `device` that last wrote one of the op's vars, or nullptr.
  static Stream* producer_stream(Accelerator& device, const OpRecord& op);

  int next_compute_ = 0;
};

}  // namespace tandem::detail
