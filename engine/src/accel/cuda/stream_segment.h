// StreamSegment: the error state of the work a CUDA stream received between two record() calls,
// so that the event closing the segment can answer DeviceEvent::error().
//
// The CUDA runtime reports device faults itself (every later call on the context returns them);
// what it cannot know about are tandem's own failures: a host item (enqueue_host) that throws,
// and work that waited on an event whose segment failed. A segment records both:
// - `fail(e)`: a host item of this segment threw;
// - `add_upstream(s)`: this segment waited on an event, not yet complete, of segment `s`.
// Its error is its own, else the first error of its upstream segments. Host items of a failed
// segment are skipped (the Stream contract: work downstream of a failure is skipped up to the
// next record()); kernels already launched cannot be recalled and run.
//
// Invariant: an error answered with `final = true` no longer changes; the caller guarantees it
// by asking only once the segment's work has ended (its event completed, or from one of its host
// items for the upstream segments waited on before that item). Upstream links are then dropped,
// so chains of segments stay as short as the work in flight.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

namespace tandem::detail {

class StreamSegment {
 public:
  void fail(std::exception_ptr error);
  void add_upstream(std::shared_ptr<StreamSegment> segment);
  // How many upstream segments were added so far: a host item remembers it when it is enqueued
  // and checks only those (the waits enqueued after it are not ordered before it).
  std::size_t upstream_count();

  // The segment's error once its work has ended (own, else upstream's); null if none.
  std::exception_ptr final_error();
  // The error seen by a host item enqueued when upstream_count() was `upstream_before`.
  std::exception_ptr error_before(std::size_t upstream_before);

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
  std::vector<std::shared_ptr<StreamSegment>> upstream_;
  std::size_t upstream_dropped_ = 0;  // entries resolved and removed from the front
};

// The first of several errors, shared between a stream and its host items in flight.
class FirstError {
 public:
  void set(std::exception_ptr error);
  std::exception_ptr take();

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace tandem::detail
