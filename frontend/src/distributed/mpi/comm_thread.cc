// CommThread: ordered starts, the header check and the polling of a ProcessGroup's collectives.
#include "comm_thread.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <utility>

#include "tandem/errors.h"
#include "tandem/ops/dtype.h"

namespace tandem::dist::detail {

namespace {

MPI_Datatype mpi_type(std::int64_t dtype) {
  switch (static_cast<nd::DType>(dtype)) {
    case nd::DType::float32:
      return MPI_FLOAT;
    case nd::DType::float64:
      return MPI_DOUBLE;
    case nd::DType::int32:
      return MPI_INT32_T;
    case nd::DType::int64:
      return MPI_INT64_T;
    case nd::DType::uint8:
      return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(std::int64_t op) {
  return static_cast<ReduceOp>(op) == ReduceOp::max ? MPI_MAX : MPI_SUM;
}

template <class T>
void divide(void* data, std::int64_t count, int by) {
  T* values = static_cast<T*>(data);
  for (std::int64_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / by);
}

// Mean = sum / size, after the sum arrived.
void divide_for_mean(const Collective& collective, int size) {
  const std::int64_t count = collective.header.count;
  switch (static_cast<nd::DType>(collective.header.dtype)) {
    case nd::DType::float32:
      divide<float>(collective.receive, count, size);
      break;
    case nd::DType::float64:
      divide<double>(collective.receive, count, size);
      break;
    case nd::DType::int32:
      divide<std::int32_t>(collective.receive, count, size);
      break;
    case nd::DType::int64:
      divide<std::int64_t>(collective.receive, count, size);
      break;
    case nd::DType::uint8:
      divide<std::uint8_t>(collective.receive, count, size);
      break;
  }
}

// Header messages travel on their own communicator; the tag keeps two collectives' headers
// apart (MPI guarantees at least 32767 tags).
int header_tag(std::uint64_t sequence) {
  return static_cast<int>(sequence % 32768);
}

}  // namespace

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

bool closing_barrier(MPI_Comm comm, std::chrono::milliseconds timeout) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_Ibarrier(comm, &request);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int done = 0;
  while (code == MPI_SUCCESS && !done) {
    code = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done || code != MPI_SUCCESS) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::cerr << "tandem::dist: rank " << rank
                << ": not every rank reached the closing barrier of the process group within "
                << timeout.count()
                << " ms (a rank died, stalled, or saw the group break and skipped it); "
                   "finalising MPI without it\n";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (code != MPI_SUCCESS) {
    std::cerr << "tandem::dist: rank " << rank << ": the closing barrier of the process group "
              << "failed: " << mpi_error_text(code) << "; finalising MPI without it\n";
    return false;
  }
  return true;
}

CommThread::CommThread(MPI_Comm header_comm, MPI_Comm data_comm, int rank, int size,
                       std::chrono::milliseconds timeout)
    : header_comm_(header_comm),
      data_comm_(data_comm),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      thread_([this] { run(); }) {}

CommThread::~CommThread() {
  stop();
}

void CommThread::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CommThread::submit(std::unique_ptr<Collective> collective) {
  bool notify = false;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!stopped_) {
      const std::uint64_t sequence = static_cast<std::uint64_t>(collective->header.sequence);
      arrived_.emplace(sequence, std::move(collective));
      notify = parked_;
    }
  }
  if (collective == nullptr) {
    submissions_.fetch_add(1, std::memory_order_release);
    if (notify) {
      wake_.notify_one();
      // Let the woken comm thread have this core now: an engine worker that ran the op would
      // otherwise keep it, spinning for its next op, for tens of microseconds (measured: a
      // lenet_bn step's exchange through the comm lane, 213 -> 142 us at 2 ranks).
      std::this_thread::yield();
    }
    return;
  }
  finish(collective, "tandem::dist: " + collective->what() +
                         " ran after its ProcessGroup was destroyed; destroy the group only "
                         "after the collectives queued on it (wait_all first)");
}

bool CommThread::wait_resolved(std::uint64_t count, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  return resolved_.wait_for(lock, limit, [&] { return resolved_count_ >= count; });
}

std::string CommThread::broken() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return broken_;
}

bool CommThread::nothing_to_do() const {
  return in_flight_.empty() && arrived_.count(next_sequence_) == 0;
}

bool CommThread::wait_for_work(std::unique_lock<std::mutex>& lock) {
  // Collectives still queued in the engine are resolved by the owner's wait before it stops
  // this thread; what arrives after that is failed by run().
  const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforePark;
  while (!stopping_ && nothing_to_do()) {
    const std::uint64_t seen = submissions_.load(std::memory_order_acquire);
    lock.unlock();
    while (submissions_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
    }
    lock.lock();
    if (std::chrono::steady_clock::now() >= spin_until) break;
  }
  parked_ = true;
  wake_.wait(lock, [&] { return stopping_ || !nothing_to_do(); });
  parked_ = false;
  return !(stopping_ && nothing_to_do());
}

bool CommThread::take_arrivals(std::unique_lock<std::mutex>& lock) {
  bool took = false;
  for (auto next = arrived_.find(next_sequence_); next != arrived_.end();
       next = arrived_.find(next_sequence_)) {
    in_flight_.push_back(std::move(next->second));
    arrived_.erase(next);
    ++next_sequence_;
    took = true;
    Collective& collective = *in_flight_.back();
    collective.started = std::chrono::steady_clock::now();
    if (broken_.empty()) {
      lock.unlock();
      start(collective);
      lock.lock();
    }
  }
  return took;
}

void CommThread::run() {
  auto last_progress = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (nothing_to_do()) {
        if (stopping_ || !wait_for_work(lock)) break;
      }
      if (take_arrivals(lock)) last_progress = std::chrono::steady_clock::now();
    }
    if (advance()) {
      last_progress = std::chrono::steady_clock::now();
    } else if (const auto idle = std::chrono::steady_clock::now() - last_progress;
               idle < kHotSpin) {
      // MPI_Test again at once: the other rank's message is usually microseconds away.
    } else if (idle < kSpinWhilePolling) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  // Whatever arrived out of order and was never started: fail it.
  std::map<std::uint64_t, std::unique_ptr<Collective>> left;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    left.swap(arrived_);
    stopped_ = true;
  }
  for (auto& [sequence, collective] : left) {
    finish(collective, "the process group was destroyed before " + collective->what() +
                           " could start (an earlier collective never ran on this rank)");
  }
}

void CommThread::start(Collective& collective) {
  collective.peers.assign(static_cast<std::size_t>(size_), CollectiveHeader{});
  collective.peers[static_cast<std::size_t>(rank_)] = collective.header;
  collective.header_receives.assign(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  collective.header_sends.assign(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  const int tag = header_tag(static_cast<std::uint64_t>(collective.header.sequence));
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const auto p = static_cast<std::size_t>(peer);
    int code = MPI_Irecv(&collective.peers[p], CollectiveHeader::kWords, MPI_INT64_T, peer, tag,
                         header_comm_, &collective.header_receives[p]);
    if (code == MPI_SUCCESS) {
      code = MPI_Isend(&collective.header, CollectiveHeader::kWords, MPI_INT64_T, peer, tag,
                       header_comm_, &collective.header_sends[p]);
    }
    if (code != MPI_SUCCESS) {
      break_group("tandem::dist: " + collective.what() + ": sending its header to rank " +
                  std::to_string(peer) + " failed: " + mpi_error_text(code));
      return;
    }
  }
  const CollectiveHeader& header = collective.header;
  const auto kind = static_cast<CollectiveKind>(header.kind);
  if (header.status != CollectiveHeader::kStatusOk && kind != CollectiveKind::barrier) {
    // This rank's input is poisoned: it takes part through scratch memory, never its arrays.
    const std::size_t bytes = static_cast<std::size_t>(header.count) *
                              ops::dtype_size(static_cast<nd::DType>(header.dtype));
    collective.scratch.assign(
        kind == CollectiveKind::allgather ? bytes * (1 + static_cast<std::size_t>(size_)) : bytes,
        std::byte{0});
    collective.receive = collective.scratch.data();
    collective.send =
        collective.scratch.data() +
        (kind == CollectiveKind::allgather ? bytes * static_cast<std::size_t>(size_) : 0);
  }
  const auto count = static_cast<int>(header.count);
  const MPI_Datatype type = mpi_type(header.dtype);
  int code = MPI_SUCCESS;
  switch (kind) {
    case CollectiveKind::allreduce:
      code = MPI_Iallreduce(MPI_IN_PLACE, collective.receive, count, type, mpi_op(header.reduce_op),
                            data_comm_, &collective.data);
      break;
    case CollectiveKind::broadcast:
      code = MPI_Ibcast(collective.receive, count, type, static_cast<int>(header.root), data_comm_,
                        &collective.data);
      break;
    case CollectiveKind::allgather:
      code = MPI_Iallgather(collective.send, count, type, collective.receive, count, type,
                            data_comm_, &collective.data);
      break;
    case CollectiveKind::barrier:
      code = MPI_Ibarrier(data_comm_, &collective.data);
      break;
  }
  collective.data_started = true;
  if (code != MPI_SUCCESS) {
    break_group("tandem::dist: " + collective.what() + ": starting it failed on rank " +
                std::to_string(rank_) + ": " + mpi_error_text(code));
  }
}

bool CommThread::poll_headers(Collective& collective) {
  // Each request on its own, so that a completed one becomes MPI_REQUEST_NULL and a timeout
  // can name the ranks whose header is still missing.
  bool all_done = true;
  for (std::vector<MPI_Request>* requests :
       {&collective.header_sends, &collective.header_receives}) {
    for (MPI_Request& request : *requests) {
      if (request == MPI_REQUEST_NULL) continue;
      int done = 0;
      const int code = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) {
        break_group("tandem::dist: " + collective.what() +
                    ": exchanging headers failed: " + mpi_error_text(code));
        return false;
      }
      if (!done) all_done = false;
    }
  }
  return all_done;
}

bool CommThread::check_headers(Collective& collective) {
  std::string mismatch;
  for (int peer = 0; peer < size_; ++peer) {
    const CollectiveHeader& theirs = collective.peers[static_cast<std::size_t>(peer)];
    if (!theirs.same_collective(collective.header)) {
      mismatch += "; rank " + std::to_string(peer) + " issued #" + std::to_string(theirs.sequence) +
                  ": " + theirs.describe();
    }
  }
  if (mismatch.empty()) return true;
  break_group("tandem::dist: collective mismatch at " + collective.what() + " on rank " +
              std::to_string(rank_) + mismatch +
              ". Every rank must queue the same collectives (kind, dtype, element count, "
              "root) in the same order");
  return false;
}

void CommThread::resolve(std::unique_ptr<Collective>& slot) {
  Collective& collective = *slot;
  std::string poisoned;
  for (int peer = 0; peer < size_; ++peer) {
    if (collective.peers[static_cast<std::size_t>(peer)].status != CollectiveHeader::kStatusOk)
      poisoned += (poisoned.empty() ? "" : ", ") + std::to_string(peer);
  }
  if (!poisoned.empty()) {
    finish(slot, "tandem::dist: " + collective.what() + " failed: its input was poisoned by an " +
                     "earlier error on rank(s) " + poisoned +
                     "; the outputs are poisoned on every rank (the group stays usable)");
    return;
  }
  if (static_cast<CollectiveKind>(collective.header.kind) == CollectiveKind::allreduce &&
      static_cast<ReduceOp>(collective.header.reduce_op) == ReduceOp::mean) {
    divide_for_mean(collective, size_);
  }
  finish(slot, {});
}

bool CommThread::advance() {
  bool progressed = false;
  for (std::unique_ptr<Collective>& slot : in_flight_) {
    if (slot == nullptr) continue;
    if (!broken().empty()) {
      finish(slot, broken());
      progressed = true;
      continue;
    }
    if (!slot->headers_done) {
      if (!poll_headers(*slot)) {
        if (broken().empty()) check_deadline(slot);
        continue;
      }
      progressed = true;
      if (!check_headers(*slot)) continue;  // broken: failed on the next round
      slot->headers_done = true;
    }
    // Every rank queued this collective: its data can be trusted once it moved.
    int done = 0;
    const int code = MPI_Test(&slot->data, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) {
      break_group("tandem::dist: " + slot->what() + " failed on rank " + std::to_string(rank_) +
                  ": " + mpi_error_text(code));
      continue;
    }
    if (done) {
      resolve(slot);
      progressed = true;
      continue;
    }
    check_deadline(slot);
  }
  while (!in_flight_.empty() && in_flight_.front() == nullptr) in_flight_.pop_front();
  return progressed;
}

void CommThread::check_deadline(std::unique_ptr<Collective>& slot) {
  if (std::chrono::steady_clock::now() - slot->started < timeout_) return;
  break_group(timeout_message(*slot));
}

std::string CommThread::timeout_message(const Collective& collective) const {
  const std::string limit = std::to_string(timeout_.count()) + " ms";
  if (!collective.headers_done) {
    std::string missing;
    for (int peer = 0; peer < size_; ++peer) {
      if (collective.header_receives[static_cast<std::size_t>(peer)] == MPI_REQUEST_NULL) continue;
      missing += (missing.empty() ? "" : ", ") + std::to_string(peer);
    }
    return "tandem::dist: rank(s) " + missing + " did not reach " + collective.what() + " within " +
           limit + " (waiting on rank " + std::to_string(rank_) +
           "): they died, hang, or stopped queuing collectives (an exception?). Raise "
           "TANDEM_DIST_TIMEOUT_MS if they are only slow";
  }
  return "tandem::dist: " + collective.what() + " did not complete within " + limit + " on rank " +
         std::to_string(rank_) +
         " although every rank reached it: a rank died or stalled during the transfer";
}

void CommThread::finish(std::unique_ptr<Collective>& slot, const std::string& error) {
  std::unique_ptr<Collective> collective = std::move(slot);
  if (error.empty()) {
    collective->done();
  } else {
    collective->done.fail(std::make_exception_ptr(Error(error)));
  }
  // A data collective that was started and not completed may still write into its arrays:
  // keep them alive (until the group goes) rather than let their memory be reused.
  if (collective->data_started && collective->data != MPI_REQUEST_NULL) {
    abandoned_.push_back(std::move(collective));
  }
  collective.reset();  // drops the array handles before the count says resolved
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++resolved_count_;
  }
  resolved_.notify_all();
}

void CommThread::break_group(const std::string& error) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_.empty()) return;
    broken_ = error;
  }
  // Header receives that never matched would hold their buffers: cancel them. Data
  // collectives cannot be cancelled; their requests are left to MPI_Finalize.
  for (std::unique_ptr<Collective>& slot : in_flight_) {
    if (slot == nullptr) continue;
    for (MPI_Request& request : slot->header_receives) {
      if (request == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&request);
      MPI_Request_free(&request);
    }
    for (MPI_Request& request : slot->header_sends) {
      if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    }
  }
}

}  // namespace tandem::dist::detail
