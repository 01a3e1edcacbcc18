// CommThread: the one thread of a ProcessGroup that makes MPI calls after initialisation.
//
// Engine ops hand it their collectives (submit, from any thread, in whatever order the engine
// finds them ready); it starts them in sequence order, the order in which the program queued
// them, because MPI needs every rank to start its collectives on a communicator in one order.
// For each collective it first exchanges headers with every other rank (point to point, on
// its own communicator), checks them, then starts the nonblocking data collective and polls it
// with MPI_Test. It holds no engine worker: the ops are async_completion ops, and this thread
// invokes their Completions.
//
// Invariants:
// - Header exchanges start in sequence order; data collectives start in sequence order, each
//   after its own headers matched and after every earlier collective's data started or was
//   abandoned. Every rank sees the same headers, so every rank decides alike whether a
//   collective's data moves: either all start it or none does.
// - Once broken (a timeout, a mismatch, an MPI error) every collective, queued or later, fails
//   with the breaking error; no MPI call is made for them.
// - The thread sleeps on a condition variable while nothing is in flight; while something is,
//   it polls, yielding, then sleeping 50 us between rounds that made no progress.
#pragma once

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collective.h"

namespace tandem::dist::detail {

class CommThread {
 public:
  CommThread(MPI_Comm header_comm, MPI_Comm data_comm, int rank, int size,
             std::chrono::milliseconds timeout);
  // Calls stop().
  ~CommThread();
  // Stops once every collective in flight is resolved; joins. A collective submitted after
  // this call fails at once (the group is gone). Idempotent.
  void stop();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Takes a collective whose op is running (its Completion taken). Any thread.
  void submit(std::unique_ptr<Collective> collective);
  // Waits until `count` collectives have been resolved (completed or failed), or `limit`
  // passed. Returns whether they were.
  bool wait_resolved(std::uint64_t count, std::chrono::milliseconds limit);
  // The error that broke the group (empty while it is healthy).
  std::string broken() const;

 private:
  void run();
  // One polling round over the collectives in flight. Returns whether anything progressed.
  bool advance();
  void start_headers(Collective& collective);
  bool poll_headers(Collective& collective);  // true once every header arrived
  // Checks the headers; starts the data collective or resolves the collective.
  void after_headers(std::unique_ptr<Collective>& slot);
  void start_data(Collective& collective);
  void finish(std::unique_ptr<Collective>& slot, const std::string& error);
  void break_group(const std::string& error);
  void check_deadline(std::unique_ptr<Collective>& slot);
  std::string timeout_message(const Collective& collective) const;

  MPI_Comm header_comm_;
  MPI_Comm data_comm_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;      // the thread: something arrived or stop
  std::condition_variable resolved_;  // waiters of wait_resolved
  std::map<std::uint64_t, std::unique_ptr<Collective>> arrived_;  // guarded by mutex_
  std::uint64_t resolved_count_ = 0;                              // guarded by mutex_
  std::string broken_;                                            // guarded by mutex_
  bool stopping_ = false;                                         // guarded by mutex_
  bool stopped_ = false;  // guarded by mutex_: the thread has left its loop

  // The thread's own state.
  std::uint64_t next_sequence_ = 0;                     // the next collective to start
  std::deque<std::unique_ptr<Collective>> in_flight_;   // in sequence order; null when resolved
  std::vector<std::unique_ptr<Collective>> abandoned_;  // failed with their data in flight
  std::thread thread_;
};

// The MPI error `code` as text ("MPI_ERR_TRUNCATE: message truncated").
std::string mpi_error_text(int code);

// Waits, up to `timeout`, until every rank of `comm` has called it (MPI_Ibarrier polled).
// Returns false, with a line on stderr naming the limit, when that did not happen in time or
// MPI failed: a rank died or stopped before closing its group. Called by the thread that owns
// MPI once the comm thread has stopped.
bool closing_barrier(MPI_Comm comm, std::chrono::milliseconds timeout);

}  // namespace tandem::dist::detail
