// CrossProcessReducer: what nn needs from a group of processes that train one model together
// (data parallelism across processes: PyTorch DDP's process group, Horovod's allreduce). nn
// talks to this interface at the NDArray level and knows nothing of the transport; tandem::dist
// (tandem/dist/process_group.h, built when MPI is found) implements it over MPI.
//
//   auto group = std::make_shared<tandem::dist::ProcessGroup>();   // from mpirun's environment
//   nn::Trainer trainer(net.collect_params(), nn::SGD(0.1),
//                       {.exchange = nn::GradientExchangeMode::during_backward,
//                        .cross_process = group});
//
// Every call queues engine ops and returns at once. Every process must make the same calls in
// the same order (the implementation checks it and reports a mismatch as a tandem::Error).
#pragma once

#include "tandem/nd/ndarray.h"

namespace tandem::nn {

class CrossProcessReducer {
 public:
  virtual ~CrossProcessReducer() = default;
  // This process's index in [0, size()) and the number of processes.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Replaces `array` by the elementwise sum of every process's `array` (same shape and dtype
  // everywhere), in place; every process gets the same bits.
  virtual void sum_in_place(nd::NDArray& array) = 0;
  // Replaces `array` on every process by process `root`'s `array`, in place.
  virtual void broadcast_in_place(nd::NDArray& array, int root) = 0;
};

}  // namespace tandem::nn
