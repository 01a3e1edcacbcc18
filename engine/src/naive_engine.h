// NaiveEngine: runs every op inline in push, one at a time (pushes from several threads take
// turns), and returns once it has finished, asynchronous completion included. It is the
// synchronous baseline of the benchmarks, the reference of the differential tests and a
// debugging mode (TANDEM_ENGINE=naive): same errors, same poison rules, no concurrency.
//
// Two kinds of push cannot run at once without deadlocking, and are queued (`deferred_`) to
// run right after the op they wait for, in push order, by the thread running ops (the runner):
// - a push from inside an op (it comes after that op in push order);
// - a push from another thread while the runner waits for an async op's Completion: the
//   completion may come from that very thread once its push returns (an I/O thread that
//   pushes a follow-up before it completes).
// Waits never hold the lock while ops run: wait_for_var waits for the runner to finish,
// wait_all for the runner's session at the time of the call (the ops pushed before it).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engine_core.h"
#include "stream_chooser.h"

namespace tandem::detail {

class NaiveEngine final : public EngineCore {
 public:
  using EngineCore::EngineCore;

  void submit(OpRecord* op, Device device, VarList reads, VarList writes,
              const OpProps& props) override;
  void submit_delete(OpRecord* op, Var var) override;
  void submit_prepared(OpRecord* op) override { run_now(op); }
  void wait_for_var(Var var, Deadline deadline) override { wait(var, "wait_for_var", deadline); }
  void wait_to_write(Var var, Deadline deadline) override { wait(var, "wait_to_write", deadline); }
  void wait_all(Deadline deadline) override;
  EngineStats stats() const override;
  bool shutdown(std::chrono::milliseconds) override { return true; }

 private:
  // Every op pushed so far has finished: a wait only reports the var's poison.
  void wait(Var var, const char* call, Deadline deadline);
  void run_now(OpRecord* op);
  void run_one(OpRecord* op);
  void release(OpRecord* op) noexcept override;
  // Waits on turn_ until `condition` holds (with the wait report and deadline of waits).
  template <class Condition>
  void wait_for_turn(std::unique_lock<std::mutex>& lock, Condition condition, Deadline deadline,
                     const char* call);

  std::mutex mutex_;
  std::condition_variable turn_;      // running_ or awaiting_completion_ changed
  std::deque<OpRecord*> deferred_;    // guarded by mutex_
  bool running_ = false;              // guarded by mutex_: a thread is the runner
  std::thread::id runner_;            // guarded by mutex_: which one, while running_
  std::uint64_t session_ = 0;         // guarded by mutex_: counts the runners so far
  bool awaiting_completion_ = false;  // guarded by mutex_: the runner waits for a Completion
  StreamChooser streams_;             // the runner's
};

}  // namespace tandem::detail
