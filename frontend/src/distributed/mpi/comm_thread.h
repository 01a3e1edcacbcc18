// CommThread: the one thread of a ProcessGroup that makes MPI calls after initialisation.
//
// Engine ops hand it their collectives (submit, from any thread, in whatever order the engine
// finds them ready); it starts them in sequence order, the order in which the program queued
// them, because MPI needs every rank to start its collectives on a communicator in one order.
// Starting a collective is two things at once: its header goes to every other rank (point to
// point, on a communicator of its own) and its nonblocking data collective starts. Neither waits
// for the other, so the check costs no round trip of its own; the thread polls both with
// MPI_Test and resolves the collective only when every header has arrived and the data has
// moved. It holds no engine worker: the ops are async_completion ops, and this thread invokes
// their Completions.
//
// Why starting the data before the headers are checked is safe: MPI never writes past the
// count a rank passed for its own buffer, so a collective whose ranks disagree (count, kind,
// root) may fail, hang or leave wrong values in that rank's own arrays, but it cannot touch
// other memory; and the headers decide its outcome before anyone sees those values. A mismatch
// breaks the group on every rank (every rank receives every header), the data request is
// abandoned with its arrays kept alive, and no further MPI call is made on the data
// communicator. A rank whose input is poisoned still takes part, sending and receiving through
// scratch memory, and its status in the header fails the collective on every rank.
//
// Invariants:
// - Collectives start (headers and data) in sequence order, each once, on every rank alike.
// - A collective completes successfully only after every rank's header arrived, matched this
//   rank's, and said its input was fine, and its data collective completed.
// - Once broken (a timeout, a mismatch, an MPI error) every collective, queued or later, fails
//   with the breaking error; no MPI call is made for them.
// - Thread hand-offs dominate a small collective's cost, so the thread spins rather than sleeps
//   while it has recent work. While something is in flight it calls MPI_Test back to back for
//   kHotSpin after the last progress (a yield on a loaded core can keep it off the core for tens
//   of microseconds), then yields between rounds up to kSpinWhilePolling (never pure spinning
//   for long: on an oversubscribed machine that starves the threads it waits for until the next
//   scheduler tick), then sleeps 50 us between rounds. With nothing in flight it looks for the
//   next collective, yielding, for kSpinBeforePark before it parks on a condition variable;
//   submit() only notifies a parked thread, and then yields its core to it.
#pragma once

#include <mpi.h>

#include <atomic>
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
  // How long the thread spins before it sleeps; see the top of the file.
  static constexpr std::chrono::microseconds kHotSpin{20};
  static constexpr std::chrono::microseconds kSpinWhilePolling{1000};
  static constexpr std::chrono::microseconds kSpinBeforePark{200};

  void run();
  // Moves the collectives that are next in sequence order into flight and starts them. Returns
  // whether it took any. Called with mutex_ held (unlocked around the MPI calls).
  bool take_arrivals(std::unique_lock<std::mutex>& lock);
  // Spins up to kSpinBeforePark for a submit, then parks. Returns false when stopping.
  bool wait_for_work(std::unique_lock<std::mutex>& lock);
  bool nothing_to_do() const;  // with mutex_ held
  // One polling round over the collectives in flight. Returns whether anything progressed.
  bool advance();
  void start(Collective& collective);
  bool poll_headers(Collective& collective);  // true once every header arrived
  // Checks the headers that arrived; breaks the group on a mismatch. Returns whether they match.
  bool check_headers(Collective& collective);
  // The data collective completed: the result on every rank (success or a poisoned input).
  void resolve(std::unique_ptr<Collective>& slot);
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
  bool stopped_ = false;                       // guarded by mutex_: the thread has left its loop
  bool parked_ = false;                        // guarded by mutex_: the thread waits on wake_
  std::atomic<std::uint64_t> submissions_{0};  // bumped by submit; the spinning thread reads it

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
