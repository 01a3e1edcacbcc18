// ProcessGroup: the processes of one job (started by mpirun) and collectives over their
// NDArrays, each queued as an engine op on the comm queue (MPI underneath).
//
//   // mpirun --oversubscribe -np 2 ./program
//   tandem::dist::ProcessGroup group;                    // MPI_Init_thread, rank, size
//   nd::NDArray g = nd::full({1000}, group.rank() + 1.0);
//   group.allreduce(g);                                   // queued: returns at once
//   nd::NDArray h = nd::dot(a, b);                        // runs while the sum is on the wire
//   nd::NDArray all = group.allgather(nd::full({2}, group.rank()));  // shape {2 * size}
//   std::cout << g << "\n";                               // waits for g: 3 3 3 ... on both ranks
//
// Each collective is one engine op that reads and writes its arrays' vars like any op: later
// ops on them wait for it, ops on other arrays overlap it, and its failure poisons its outputs
// (rethrown by wait_to_read, to_vector, wait_all...). The op holds no CPU worker while MPI
// works: it starts the nonblocking call (MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather,
// MPI_Ibarrier) on the group's comm thread, which polls it and completes the op (an
// async_completion op, as the CUDA fences complete theirs).
//
// Contract:
// - Every process must queue the same collectives, with the same shapes and dtypes, in the
//   same order (MPI's rule). The order is the order of the calls on this object, whatever
//   order the engine finds the ops ready in: the comm thread starts them in call order.
// - Before its data moves, each collective exchanges a small header with every other rank
//   (sequence number, kind, dtype, element count, root). A mismatch fails the collective on
//   every rank with a tandem::Error naming what each rank issued; the data collective is
//   never started, so nothing is corrupted and nothing hangs.
// - An input poisoned by an earlier error on one rank fails that collective on every rank
//   (naming the rank), and the group stays usable.
// - A rank that does not reach a collective within Options::timeout (it died, hangs, or threw
//   and stopped issuing collectives) fails it on the others with a tandem::Error naming the
//   rank(s) and the collective. MPI errors are returned, never aborted on
//   (MPI_ERRORS_RETURN). After a timeout, a mismatch or an MPI error the group is broken:
//   every later collective fails at once with the first error, instead of hanging.
//   Open MPI's mpirun ends the whole job when a process exits with a non-zero status; run with
//   `--mca orte_abort_on_non_zero_status 0` to let the others report it.
// - Arrays must be contiguous and on the cpu (MPI), or, for allreduce and broadcast, on a cuda
//   device (NCCL across the processes: one communicator per device, made on first use with
//   ncclCommInitRank from a unique id rank 0 broadcasts over MPI; libnccl.so.2 dlopen'ed; each
//   collective one op on the device's comm queue, in call order). Anything else, or a gpu array
//   where NCCL is not usable, is a tandem::Error at the call saying why. The NCCL path has no
//   header check and no timeout yet: a mismatch or a dead rank is NCCL's to report.
// - One ProcessGroup per process at a time (MPI is initialised once). Its destructor waits
//   for the collectives queued so far (up to the timeout), then finalises MPI if it
//   initialised it. A healthy group first meets at a closing barrier (up to the timeout); a
//   broken one does not, and Open MPI's fence at the start of MPI_Finalize is turned off
//   (its MCA parameter async_mpi_finalize, set when tandem initialises MPI), so a survivor
//   of a dead rank exits instead of waiting for it at MPI_Finalize.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "tandem/nd/ndarray.h"
#include "tandem/nn/cross_process.h"

namespace tandem::dist {

namespace detail {
class NcclProcessGroup;
}

enum class ReduceOp { sum, mean, max };
const char* reduce_op_name(ReduceOp op);

struct ProcessGroupOptions {
  // How long a collective waits for the other ranks before it fails (DDP's timeout). Read
  // from TANDEM_DIST_TIMEOUT_MS by from_env().
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // The defaults, with TANDEM_DIST_TIMEOUT_MS applied when set. Throws tandem::Error for a
  // value that is not a positive integer.
  static ProcessGroupOptions from_env();
};

class ProcessGroup : public nn::CrossProcessReducer {
 public:
  // Initialises MPI (MPI_Init_thread, asking for MPI_THREAD_MULTIPLE) unless the program did,
  // and starts the comm thread. Throws tandem::Error when MPI cannot be initialised, when
  // another ProcessGroup is alive, when MPI was finalised already, or when WORLD_SIZE (set by
  // torchrun-style launchers) differs from the number of processes MPI connects: processes
  // started without mpirun (or tandem-run) would each train alone.
  explicit ProcessGroup(ProcessGroupOptions options = ProcessGroupOptions::from_env());
  ~ProcessGroup() override;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const override;
  int size() const override;
  // This process's index among the processes of its machine (those that share memory with it),
  // and their number: the GPU to take is typically cuda(local_rank()) (torchrun's LOCAL_RANK).
  int local_rank() const;
  int local_size() const;
  const ProcessGroupOptions& options() const;

  // In place: every rank's `array` becomes the sum (mean, max) over the ranks. Mean divides
  // the sum by size() (integer division for integer dtypes).
  void allreduce(nd::NDArray& array, ReduceOp op = ReduceOp::sum);
  // In place: every rank's `array` becomes rank `root`'s.
  void broadcast(nd::NDArray& array, int root = 0);
  // A new array: the ranks' arrays stacked along axis 0, rank 0 first (shape {size() * n,
  // ...} for inputs of shape {n, ...}; a scalar input gives shape {size()}).
  nd::NDArray allgather(const nd::NDArray& array);
  // Blocks until every rank has called barrier() (and the collectives queued before it on this
  // rank have finished). Throws what they threw.
  void barrier();

  // nn::CrossProcessReducer
  void sum_in_place(nd::NDArray& array) override { allreduce(array, ReduceOp::sum); }
  void broadcast_in_place(nd::NDArray& array, int root) override { broadcast(array, root); }

  // Collectives queued on this group so far (the sequence number of the next one).
  std::uint64_t collectives_queued() const;

  struct Impl;

 private:
  // The NCCL group for a cuda array (made on first use), or null for other arrays. Throws
  // tandem::Error when the array is on cuda and NCCL is not usable, saying why.
  detail::NcclProcessGroup* nccl_for(const nd::NDArray& array, const char* op);

  std::shared_ptr<Impl> impl_;
};

}  // namespace tandem::dist
