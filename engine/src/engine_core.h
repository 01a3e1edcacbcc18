// EngineCore: what the threaded and the naive engine share: turning push arguments into an op
// record, running an op's body with the poison/skip rules, and settling its outcome (poison,
// error registry, counters). Each engine adds how ops wait for their vars and where they run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

#include "error_record.h"
#include "tandem/engine.h"
#include "var_state.h"

namespace tandem::detail {

// The op running on this thread, if any (ops can nest when a naive engine runs a push inline).
OpRecord* current_op() noexcept;

class EngineCore : public CompletionSink {
 public:
  explicit EngineCore(EngineConfig config) : config_(std::move(config)) {}
  virtual ~EngineCore() = default;

  const EngineConfig& config() const { return config_; }
  Var new_var();

  // Runs a ready op on lane `worker` (-1: inline). Skips it when an input is poisoned; settles
  // it unless it completes asynchronously.
  void execute(OpRecord* op, int worker) noexcept;
  // Called by Completion when an async op's completion and body have both ended.
  void complete(OpRecord* op) noexcept override;

  // Engine entry points, implemented by each kind.
  virtual void submit(OpRecord* op, Device device, VarList reads, VarList writes,
                      const OpProps& props) = 0;
  virtual void submit_delete(OpRecord* op, Var var) = 0;
  virtual void wait_for_var(Var var) = 0;
  virtual void wait_to_write(Var var) = 0;
  virtual void wait_all() = 0;
  virtual EngineStats stats() const = 0;
  // Finishes every pending op; false if some were still running after `timeout`.
  virtual bool shutdown(std::chrono::milliseconds timeout) = 0;

 protected:
  // Fills `op` from push arguments (validated, deduplicated, sorted by var). On bad input,
  // throws tandem::Error after discarding `op`.
  void prepare(OpRecord* op, Device device, VarList reads, VarList writes, const OpProps& props);
  void prepare_delete(OpRecord* op, Var var);
  // Frees an op that will never run.
  static void discard(OpRecord* op) noexcept;
  // Releases the op's vars (waking the ops behind it) and recycles the record.
  virtual void release(OpRecord* op) noexcept = 0;

  static void check_not_inside_op(const char* call);
  static VarState* checked_state(Var var, const char* call);
  // Throws the poison's error (marking it thrown) if there is one.
  static void throw_if_poisoned(const ErrorRef& poison);
  // Rethrows the oldest error that no sync point has thrown yet.
  void throw_first_unthrown_error();

  EngineStats base_stats() const;
  // The profiler's name for worker lane `worker` (as passed to execute).
  virtual std::string lane_name(int worker) const;

  // Written by pushing threads only; on its own cache line so that workers, which read the
  // engine's vtable and config on every op, never miss on it.
  alignas(64) std::atomic<std::uint64_t> ops_pushed_{0};

 private:
  void finish_with(OpRecord* op, std::exception_ptr error) noexcept;
  void finish(OpRecord* op, const ErrorRef& outcome, bool skipped) noexcept;

  alignas(64) EngineConfig config_;
  ErrorRegistry errors_;
  std::atomic<std::uint64_t> ops_failed_{0};
  std::atomic<std::uint64_t> ops_skipped_{0};
};

}  // namespace tandem::detail
