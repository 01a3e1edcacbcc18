// ErrorRecord: one op failure, shared by every var it poisons (the failed op's writes and,
// transitively, the writes of every op skipped because of it).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>

namespace tandem::detail {

struct ErrorRecord {
  ErrorRecord(std::exception_ptr e, std::uint64_t sequence)
      : error(std::move(e)), op_sequence(sequence) {}
  std::exception_ptr error;
  // Push order of the op that failed: an op skipped because several inputs are poisoned passes
  // on the oldest of their errors, so the error reported never depends on timing or addresses.
  std::uint64_t op_sequence;
  // The op's position in its replayed graph segment (captured_graph.h), which takes one push
  // sequence for all its ops; 0 for an op pushed on its own.
  std::uint32_t graph_position = 0;
  // Set by the first sync point that throws it; wait_all skips records already thrown.
  std::atomic<bool> thrown{false};
};
using ErrorRef = std::shared_ptr<ErrorRecord>;

// True when the op that failed with `a` was pushed before the one that failed with `b`.
inline bool pushed_before(const ErrorRecord& a, const ErrorRecord& b) {
  return a.op_sequence != b.op_sequence ? a.op_sequence < b.op_sequence
                                        : a.graph_position < b.graph_position;
}

// The errors no sync point has thrown yet. Errors are recorded in completion order (which
// depends on timing) but taken in push order: `take_first_unthrown` returns the record of the
// op pushed first, so wait_all reports a program's errors in the same order on every engine.
// Touched only when an op fails and at wait_all, so a mutex and a linear scan are fine here.
class ErrorRegistry {
 public:
  void record(ErrorRef error) {
    std::lock_guard lock(mutex_);
    // Records thrown by wait_for_var linger until wait_all passes them; drop them now and then
    // so a program that only ever calls wait_for_var does not grow this list.
    if (unthrown_.size() >= kPruneAt)
      std::erase_if(unthrown_,
                    [](const ErrorRef& e) { return e->thrown.load(std::memory_order_relaxed); });
    unthrown_.push_back(std::move(error));
  }
  // The record of the earliest-pushed op not thrown yet, marked thrown; null if none.
  ErrorRef take_first_unthrown() {
    std::lock_guard lock(mutex_);
    for (;;) {
      auto first = std::min_element(
          unthrown_.begin(), unthrown_.end(),
          [](const ErrorRef& a, const ErrorRef& b) { return pushed_before(*a, *b); });
      if (first == unthrown_.end()) return nullptr;
      ErrorRef error = std::move(*first);
      unthrown_.erase(first);
      // Skip records a wait_for_var has thrown already.
      if (!error->thrown.exchange(true)) return error;
    }
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& e : unthrown_) n += e->thrown.load() ? 0 : 1;
    return n;
  }

 private:
  static constexpr std::size_t kPruneAt = 1024;
  mutable std::mutex mutex_;
  std::deque<ErrorRef> unthrown_;
};

}  // namespace tandem::detail
