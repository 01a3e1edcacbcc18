// NaiveEngine: runs every op inline in push, one at a time (pushes from several threads take
// turns), and returns once it has finished, asynchronous completion included. A push from
// inside an op runs right after that op, keeping push order. It is the
// synchronous baseline of the benchmarks, the reference of the differential tests and a
// debugging mode (TANDEM_ENGINE=naive): same errors, same poison rules, no concurrency.
#pragma once

#include <deque>
#include <mutex>

#include "engine_core.h"

namespace tandem::detail {

class NaiveEngine final : public EngineCore {
 public:
  using EngineCore::EngineCore;

  void submit(OpRecord* op, Device device, VarList reads, VarList writes,
              const OpProps& props) override;
  void submit_delete(OpRecord* op, Var var) override;
  void wait_for_var(Var var) override { wait(var, "wait_for_var"); }
  void wait_to_write(Var var) override { wait(var, "wait_to_write"); }
  void wait_all() override;
  EngineStats stats() const override;
  bool shutdown(std::chrono::milliseconds) override { return true; }

 private:
  // Every op pushed so far has finished: a wait only reports the var's poison.
  void wait(Var var, const char* call);
  void run_now(OpRecord* op);
  void run_one(OpRecord* op);
  void release(OpRecord* op) noexcept override;

  // Recursive: an op may push; that op is deferred until the pushing op has finished.
  std::recursive_mutex mutex_;
  std::deque<OpRecord*> deferred_;  // guarded by mutex_
  int next_compute_stream_ = 0;     // guarded by mutex_: round-robin over compute streams
};

}  // namespace tandem::detail
