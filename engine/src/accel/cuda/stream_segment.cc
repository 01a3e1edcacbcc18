#include "stream_segment.h"

#include <algorithm>
#include <utility>

namespace tandem::detail {

void StreamSegment::fail(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!error_) error_ = std::move(error);
}

void StreamSegment::add_upstream(std::shared_ptr<StreamSegment> segment) {
  std::lock_guard lock(mutex_);
  upstream_.push_back(std::move(segment));
}

std::size_t StreamSegment::upstream_count() {
  std::lock_guard lock(mutex_);
  return upstream_dropped_ + upstream_.size();
}

std::exception_ptr StreamSegment::final_error() {
  std::vector<std::shared_ptr<StreamSegment>> upstream;
  {
    std::lock_guard lock(mutex_);
    if (error_ || upstream_.empty()) return error_;
    upstream = upstream_;
  }
  // Upstream segments ended before this one (this stream waited on them): final as well. The
  // lock is not held while asking them, so no lock order between segments is needed.
  std::exception_ptr found;
  for (const auto& segment : upstream) {
    found = segment->final_error();
    if (found) break;
  }
  std::lock_guard lock(mutex_);
  if (!error_) error_ = found;
  upstream_dropped_ += upstream_.size();
  upstream_.clear();
  return error_;
}

std::exception_ptr StreamSegment::error_before(std::size_t upstream_before) {
  std::vector<std::shared_ptr<StreamSegment>> upstream;
  {
    std::lock_guard lock(mutex_);
    if (error_) return error_;
    // Entries already dropped were resolved without error (an error would have been kept).
    const std::size_t live =
        upstream_before > upstream_dropped_ ? upstream_before - upstream_dropped_ : 0;
    upstream.assign(upstream_.begin(), upstream_.begin() + static_cast<std::ptrdiff_t>(
                                                               std::min(live, upstream_.size())));
  }
  for (const auto& segment : upstream) {
    if (auto error = segment->final_error()) {
      fail(error);
      return error;
    }
  }
  return nullptr;
}

void FirstError::set(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!error_) error_ = std::move(error);
}

std::exception_ptr FirstError::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(error_, nullptr);
}

}  // namespace tandem::detail
