// Collective: one queued collective of a ProcessGroup, from the call that queues it to the
// Completion the comm thread invokes. Not part of the public API.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/dist/process_group.h"
#include "tandem/run_context.h"

namespace tandem::dist::detail {

enum class CollectiveKind : std::int64_t { allreduce = 1, broadcast, allgather, barrier };
const char* collective_kind_name(CollectiveKind kind);

// What every rank sends every other rank alongside a collective's data (point to point, on a
// communicator of its own, started together with the data collective: no extra round trip).
// Equal on every rank for a well-formed program except `status`; the comm thread resolves a
// collective only once every rank's header arrived and matched, so a mismatched collective
// fails on every rank instead of completing with wrong data.
struct CollectiveHeader {
  std::int64_t sequence = 0;
  std::int64_t kind = 0;
  std::int64_t reduce_op = 0;
  std::int64_t root = 0;
  std::int64_t dtype = 0;
  std::int64_t count = 0;   // elements per rank
  std::int64_t status = 0;  // kStatusOk or kStatusInputPoisoned

  static constexpr std::int64_t kStatusOk = 1;
  static constexpr std::int64_t kStatusInputPoisoned = 2;
  static constexpr int kWords = 7;

  bool same_collective(const CollectiveHeader& other) const {
    return sequence == other.sequence && kind == other.kind && reduce_op == other.reduce_op &&
           root == other.root && dtype == other.dtype && count == other.count;
  }
  // "allreduce(sum) of 1000 float32", "broadcast from rank 0 of 10 float32", "barrier".
  std::string describe() const;
};

struct Collective {
  CollectiveHeader header;  // this rank's (status set when the op runs)
  // Keep the arrays' storage alive while MPI uses it.
  nd::NDArray input;
  nd::NDArray output;
  // Set by the probe op that runs just before the collective's op: false when that probe was
  // skipped because an input was poisoned on this rank.
  std::atomic<bool> inputs_ok{false};
  Completion done;
  // Filled by the op when it runs: the arrays' memory, or null where this rank's input was
  // poisoned (the comm thread then sends and receives through `scratch` instead).
  void* send = nullptr;
  void* receive = nullptr;

  // The comm thread's state. Headers and data start together; the collective is resolved once
  // both are complete (or on a timeout or a broken group).
  std::chrono::steady_clock::time_point started;
  std::vector<CollectiveHeader> peers;       // one per rank
  std::vector<MPI_Request> header_receives;  // one per rank (MPI_REQUEST_NULL for this rank)
  std::vector<MPI_Request> header_sends;
  bool headers_done = false;  // every header arrived and matched this rank's
  MPI_Request data = MPI_REQUEST_NULL;
  bool data_started = false;
  std::vector<std::byte> scratch;  // stands in for the arrays of a poisoned input

  // "allreduce #12 (allreduce(sum) of 1000 float32)".
  std::string what() const;
};

}  // namespace tandem::dist::detail
