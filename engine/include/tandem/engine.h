// Engine: orders ops by the vars they read and write and runs them asynchronously.
//
//   auto& engine = tandem::Engine::get();              // kind from TANDEM_ENGINE
//   tandem::Var in = engine.new_var(), out = engine.new_var();
//   engine.push([&] { scale(src, dst); }, tandem::cpu(), {in}, {out}, {.name = "scale"});
//   engine.wait_for_var(out);                          // blocks this thread only
//
// The contract (every rule has a test in tests/engine/):
// - Results are those of running the ops one by one in push order.
// - Ops that only read a var may run together; a write waits for every earlier read and the
//   earlier write of that var; later reads and writes wait for it.
// - A var listed as both read and write is a write; duplicates are ignored.
// - push is thread-safe. Between threads, the order is the order in which their pushes take
//   each var; an op's vars are taken together, so two threads can never order one pair of vars
//   in opposite ways.
// - An op that throws poisons the vars it writes. Later ops reading a poisoned var are skipped
//   (unless `no_skip`) and poison their own writes; a later successful write clears the poison.
//   When an op reads several poisoned vars, the oldest error wins: the one raised by the op
//   pushed first, so the error a var carries does not depend on timing.
//   `wait_for_var(v)` throws v's error; `wait_all` throws the first error no sync point has
//   thrown yet, "first" in push order (on every engine, whatever order the ops finished in).
//   Each error is thrown once by `wait_all`; `wait_for_var` throws whenever the var is
//   poisoned. The engine keeps running after any error.
// - The same rules hold for accelerator ops, whose device work fails after they were launched:
//   device work downstream of a failure is skipped and passes the oldest failure on, never an
//   error of its own (see tandem/accel/stream.h for what an accelerator op may touch when).
// - `wait_all` waits for the ops pushed before it was called; ops other threads push meanwhile
//   do not hold it up.
// - Waiting from inside an op throws DeadlockError instead of hanging.
// - Every wait takes an optional timeout (TimeoutError, naming what the wait is blocked on);
//   a wait without one logs the same report every EngineConfig::wait_warn_after.
// - Backpressure: past `max_ops_in_flight` pushed-but-unfinished ops, push (and delete_var)
//   blocks until ops finish, never inside an op, where blocking could deadlock. Each thread
//   checks the bound every 32 submissions, so the bound holds within 32 ops per submitting
//   thread. A push never blocks for good on ops that wait for an async op's Completion: when
//   nothing completes for 250 ms while Completions are out (20 ms on a thread that has invoked
//   one before), it goes over the bound (EngineStats::pushes_over_bound), since it may be the
//   push that Completion waits for.
// - Vars are checked: a default-constructed var, a var used or deleted again after delete_var,
//   and a var of another engine make push, the waits and delete_var throw tandem::Error (the
//   op is not queued).
//
// Capture and replay (a window of pushes recorded once, entered again as one unit):
// tandem/graph.h.
//
// Lifetime:
// - The process-wide engine (`get`) lives until the process ends; no static destructor
//   destroys it. When the process exits it finishes every op pushed so far (their device work
//   too), writes the TANDEM_PROFILE trace and joins its threads; afterwards, as for everything
//   run from static destructors after that point, it runs each push, wait and delete_var inline
//   on the calling thread, like the naive engine. So arrays and vars at namespace scope, and
//   objects whose destructors push, are fine, before or after main returns.
// - `set_default` refuses (throws tandem::Error, saying how many) while vars of the current
//   process-wide engine are alive: they would be left without their engine.
// - A private engine (`create`) should be destroyed after its vars are deleted. Destroyed
//   earlier, it finishes its ops, logs an error naming how many vars are alive, and hands them
//   to a stand-in that never dies: `Engine::owner(var)` then returns the stand-in, which runs
//   deletes (and anything else) inline. The Engine object itself is gone: calls through a
//   pointer to it are use-after-free.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "tandem/detail/op_record.h"
#include "tandem/device.h"
#include "tandem/engine_config.h"
#include "tandem/errors.h"
#include "tandem/op_props.h"
#include "tandem/run_context.h"
#include "tandem/var.h"

namespace tandem {

struct EngineStats {
  std::uint64_t ops_pushed = 0;
  std::uint64_t ops_completed = 0;   // ran (successfully or not) or were skipped
  std::uint64_t ops_failed = 0;      // threw, or completed with an error
  std::uint64_t ops_skipped = 0;     // not run because an input was poisoned
  std::uint64_t pushes_blocked = 0;  // pushes that waited on the backpressure bound
  // Blocked pushes let through over the bound because nothing completed while async ops waited
  // for their completions (the push may be the one such a completion waits for).
  std::uint64_t pushes_over_bound = 0;
  std::uint64_t ops_in_flight = 0;
  std::uint64_t vars_alive = 0;  // made by new_var and not yet passed to delete_var
  // Device-side waits of an accelerator op's stream on work of another stream (of any device of
  // the same backend): each one an event wait on the device. A dependency chain on one device
  // stays on one stream and adds none.
  std::uint64_t cross_stream_waits = 0;
  // How the threaded engine's CPU workers spent their time (0 for the naive engine): what tells
  // a run whose workers stay awake from one whose workers park and are woken per op.
  // - worker_wakes: drainers started on a worker thread (a oneTBB task enqueued, which wakes a
  //   parked thread if none is spinning); worker_parks: drainers that gave their thread back
  //   (the first idle one after EngineConfig::spin_before_park, another after a few polls).
  // - worker_idle_polls: empty polls of the ready queues while a drainer was idle;
  //   worker_yields: those an idle drainer followed with a yield of its core, because another
  //   drainer was already idle.
  // - ops_run_next_here: ops a worker ran right after the op whose completion made them ready,
  //   bypassing the queues; ops_run_inline: ops run on the pushing thread (inline_when_ready).
  std::uint64_t worker_wakes = 0;
  std::uint64_t worker_parks = 0;
  std::uint64_t worker_idle_polls = 0;
  std::uint64_t worker_yields = 0;
  // Drainers that started running more than 1 ms after a push woke them: the thread meant to
  // run them waited for a core (the woken worker placed on a busy core). Until such a drainer
  // starts, no push wakes another one, so a run with late starts may have used one worker.
  std::uint64_t worker_late_starts = 0;
  std::uint64_t ops_run_next_here = 0;
  std::uint64_t ops_run_inline = 0;
};

class Engine {
 public:
  // The process-wide engine, created on first use from EngineConfig::from_env().
  static Engine& get();
  // Replaces the process-wide engine (after finishing every op of the old one). Throws
  // tandem::Error, leaving the engine as it was, while vars of the old one are alive. Not to be
  // called while other threads use the engine.
  static void set_default(const EngineConfig& config);
  static void set_default(EngineKind kind);
  // A private engine, e.g. to compare kinds side by side in one process.
  static std::unique_ptr<Engine> create(const EngineConfig& config);
  //
  // set_default(config) and create(config) read no environment variable: an embedder sets
  // everything from code. Only get() (the first time), set_default(EngineKind) and the
  // accelerator registry (AcceleratorConfig::from_env, unless configure_accelerators was called
  // first) read TANDEM_* variables.
  //
  //   tandem::EngineConfig config;        // the defaults, not the environment
  //   config.cpu_workers = 4;              // 0: one per hardware thread
  //   tandem::Engine::set_default(config); // before the first Engine::get()
  //   int workers = tandem::Engine::get().cpu_workers();  // 4
  // The engine that serves `var`: the one whose new_var made it, or, if that one was destroyed
  // while the var was alive, its stand-in (see Lifetime above). Code that drops a var when an
  // object that may outlive its engine dies deletes it through this engine. Throws
  // tandem::Error for an invalid or deleted var.
  static Engine& owner(Var var);
  // owner(var) while the engine whose new_var made `var` is alive; null once that engine was
  // destroyed and its stand-in holds the var (the stand-in is there for deletes: code about to
  // push or wait on such a var reports the destroyed engine instead). Throws as owner() does.
  static Engine* owner_if_alive(Var var);

  virtual ~Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  virtual EngineKind kind() const = 0;
  virtual const EngineConfig& config() const = 0;

  // The CPU worker pool's threads that can run ops: EngineConfig::cpu_workers (0 there: one per
  // hardware thread), fewer if the process caps oneTBB lower with its own
  // tbb::global_control(max_allowed_parallelism, n), which leaves n - 1 workers. 0 for the naive
  // engine, which runs every op inline.
  virtual int cpu_workers() const = 0;
  // The dedicated threads for urgent CPU ops (priority > 0, or a copy queue):
  // EngineConfig::priority_workers; 0 for the naive engine.
  virtual int priority_workers() const = 0;
  // The bound on RunContext::worker() for CPU ops: every pool worker and priority lane reports
  // an index below it, so per-worker scratch can be an array of this size. It is
  // cpu_workers() + priority_workers(), except under a oneTBB cap (see cpu_workers): the pool
  // keeps the slots it asked for and its running workers may use any of them. 0 for the naive
  // engine.
  virtual int worker_lanes() const = 0;

  virtual Var new_var() = 0;

  // Queues `fn` (callable as fn(RunContext&) or fn()) to run on `device` once every var it
  // reads and writes is free for it. Returns at once (naive engine: after running it). Throws
  // tandem::Error for an invalid var or device, or an unsupported queue; the op is then not
  // queued.
  // A push takes no heap memory in steady state when `reads` and `writes` together list at most
  // detail::OpRecord::kInlineSlots (6) vars (duplicates count: the lists' sizes are added before
  // they are deduplicated), and `fn`, once
  // decayed, is at most detail::OpRecord::kInlineCallableBytes (96) bytes, aligned to at most
  // alignof(std::max_align_t) and nothrow-move-constructible. Past either limit the push
  // allocates (the vars' slots, or a heap copy of `fn`) and is still correct, only slower.
  // Capture large state by pointer or in a shared_ptr to stay inline.
  template <class Fn>
  void push(Fn&& fn, Device device, VarList reads, VarList writes, const OpProps& props = {}) {
    detail::OpRecord* op = detail::acquire_op_record();
    try {
      op->set_callable(std::forward<Fn>(fn));
    } catch (...) {
      detail::release_op_record(op);
      throw;
    }
    submit(op, device, reads, writes, props);
  }

  // Frees `var` once every op pushed on it so far has finished, after running `deleter` there
  // (the deleter runs even if the var is poisoned; an exception from it is reported by
  // wait_all). `var` must not be used after this call. When no op holds or waits for the var,
  // the threaded engine runs the deleter at once on the calling thread, as the naive engine
  // always does (not from inside an op, nor for a var with device work pending): keep deleters
  // cheap, and push slow clean-up as an op of its own.
  template <class Fn>
  void delete_var(Var var, Fn&& deleter) {
    detail::OpRecord* op = detail::acquire_op_record();
    try {
      op->set_callable(std::forward<Fn>(deleter));
    } catch (...) {
      detail::release_op_record(op);
      throw;
    }
    submit_delete(op, var);
  }
  void delete_var(Var var) {
    delete_var(var, [] {});
  }

  // Blocks until every op pushed so far that writes `var` has finished; throws its error.
  virtual void wait_for_var(Var var) = 0;
  // Blocks until every op pushed so far on `var` (reads too) has finished; throws its error.
  virtual void wait_to_write(Var var) = 0;
  // The same waits, giving up after `timeout`: they then throw TimeoutError, whose message says
  // what the wait is blocked on (see EngineConfig::wait_warn_after for the same report in the
  // log without giving up). Timing out cancels nothing.
  //   engine.wait_for_var(out, std::chrono::seconds(10));
  virtual void wait_for_var(Var var, std::chrono::milliseconds timeout) = 0;
  virtual void wait_to_write(Var var, std::chrono::milliseconds timeout) = 0;
  virtual void wait_all(std::chrono::milliseconds timeout) = 0;
  // Blocks until every op pushed so far has finished; throws the first error not yet thrown.
  virtual void wait_all() = 0;

  virtual EngineStats stats() const = 0;

 protected:
  Engine() = default;
  // Take ownership of `op` in every case, also when they throw.
  virtual void submit(detail::OpRecord* op, Device device, VarList reads, VarList writes,
                      const OpProps& props) = 0;
  virtual void submit_delete(detail::OpRecord* op, Var var) = 0;
};

// Shorthand for Engine::get().wait_all().
inline void wait_all() {
  Engine::get().wait_all();
}

}  // namespace tandem
