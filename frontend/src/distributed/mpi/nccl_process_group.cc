// NcclProcessGroup with NCCL (ops' loader: libnccl.so.2 loaded on first use), one communicator per
// process group and device (ncclCommInitRank, its unique id broadcast over MPI by the group
// itself).
#include "nccl_process_group.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tandem/accel/cuda.h"
#include "tandem/accel/cuda_check.h"
#include "tandem/errors.h"
#include "tandem/nd/creation.h"
#include "tandem/ops/cuda/nccl_library.h"

namespace tandem::dist::detail {

namespace {

using ops::NcclLibrary;

void check_nccl(ncclResult_t result, const char* call, int device) {
  if (result == ncclSuccess) return;
  throw Error(std::string("tandem::dist: ") + call + " on " + to_string(cuda(device)) +
              " failed: " + NcclLibrary::get().error_string(result));
}

ncclDataType_t nccl_type(nd::DType dtype) {
  switch (dtype) {
    case nd::DType::float32:
      return ncclFloat32;
    case nd::DType::float64:
      return ncclFloat64;
    case nd::DType::int32:
      return ncclInt32;
    case nd::DType::int64:
      return ncclInt64;
    case nd::DType::uint8:
      return ncclUint8;
  }
  throw Error("tandem::dist: a collective through NCCL got an unknown dtype");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::mean:
      return ncclAvg;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

// The unique id travels as int64 words, plus one word saying whether rank 0 could draw it.
constexpr std::int64_t kIdWords = (NCCL_UNIQUE_ID_BYTES + 7) / 8;

}  // namespace

std::string nccl_unusable(const nd::NDArray& array) {
  if (!crosses_through_nccl(array.device())) {
    return "the array is on " + to_string(array.device()) + "; NCCL takes cuda arrays";
  }
  if (!array.is_contiguous()) {
    return "the array (shape " + array.shape().to_string() + ") on " + to_string(array.device()) +
           " is a strided view (NCCL sums contiguous memory): pass array.copy()";
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return "no CUDA device is usable in this process";
  }
  return NcclLibrary::get().unavailable();
}

struct NcclProcessGroup::State {
  int device = 0;
  ncclComm_t comm = nullptr;
  Var order;  // written by every collective: the engine runs them in call order
};

NcclProcessGroup::NcclProcessGroup(ProcessGroup& group, int device)
    : state_(std::make_shared<State>()) {
  state_->device = device;
  const NcclLibrary& nccl = NcclLibrary::get();
  // Rank 0 draws the id (or says it could not); every rank takes part in the broadcast either
  // way, so that a failure there is an error everywhere instead of a wait.
  std::vector<std::int64_t> words(static_cast<std::size_t>(kIdWords + 1), 0);
  ncclUniqueId id{};
  if (group.rank() == 0 && nccl.unavailable().empty() && nccl.get_unique_id(&id) == ncclSuccess) {
    std::memcpy(words.data(), id.internal, NCCL_UNIQUE_ID_BYTES);
    words.back() = 1;
  }
  nd::NDArray shared = nd::from_vector(words);
  group.broadcast(shared, 0);
  words = shared.to_vector<std::int64_t>();
  if (words.back() != 1) {
    throw Error("tandem::dist: rank 0 could not draw an NCCL unique id for " +
                to_string(cuda(device)) +
                (nccl.unavailable().empty() ? std::string() : " (" + nccl.unavailable() + ")"));
  }
  if (!nccl.unavailable().empty()) throw Error("tandem::dist: " + nccl.unavailable());
  std::memcpy(id.internal, words.data(), NCCL_UNIQUE_ID_BYTES);
  {
    tandem::detail::DeviceGuard on(device);
    check_nccl(nccl.comm_init_rank(&state_->comm, group.size(), id, group.rank()),
               "ncclCommInitRank", device);
  }
  state_->order = Engine::get().new_var();
}

NcclProcessGroup::~NcclProcessGroup() {
  Engine& engine = Engine::get();
  try {
    engine.wait_for_var(state_->order);
  } catch (const Error&) {
    // the collectives' errors reached their arrays already
  }
  engine.delete_var(state_->order);
  if (state_->comm != nullptr) {
    tandem::detail::DeviceGuard on(state_->device);
    NcclLibrary::get().comm_destroy(state_->comm);
  }
}

int NcclProcessGroup::device() const {
  return state_->device;
}

void NcclProcessGroup::allreduce(nd::NDArray& array, ReduceOp op) {
  const std::shared_ptr<State> state = state_;
  const std::vector<Var> writes{array.var(), state->order};
  array.engine().push(
      [state, array, op](RunContext& context) {
        void* data = array.view().data;
        check_nccl(NcclLibrary::get().all_reduce(data, data, static_cast<std::size_t>(array.size()),
                                                 nccl_type(array.dtype()), nccl_op(op), state->comm,
                                                 cuda_stream(*context.stream())),
                   "ncclAllReduce", state->device);
      },
      array.device(), {}, VarList(writes), {.name = "dist.nccl_allreduce", .queue = Queue::comm});
}

void NcclProcessGroup::broadcast(nd::NDArray& array, int root) {
  const std::shared_ptr<State> state = state_;
  const std::vector<Var> writes{array.var(), state->order};
  array.engine().push(
      [state, array, root](RunContext& context) {
        void* data = array.view().data;
        check_nccl(NcclLibrary::get().broadcast(data, data, static_cast<std::size_t>(array.size()),
                                                nccl_type(array.dtype()), root, state->comm,
                                                cuda_stream(*context.stream())),
                   "ncclBroadcast", state->device);
      },
      array.device(), {}, VarList(writes), {.name = "dist.nccl_broadcast", .queue = Queue::comm});
}

}  // namespace tandem::dist::detail
