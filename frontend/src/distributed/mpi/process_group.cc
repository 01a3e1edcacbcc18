// ProcessGroup: MPI initialisation, and the engine ops that hand collectives to the comm thread.
//
// Each collective is two engine ops and a private var:
// - a probe (reads the inputs, writes the private var) that only records that it ran. The
//   engine skips it when an input is poisoned on this rank;
// - the collective's op (reads the inputs and the private var, writes the outputs; no_skip,
//   async_completion, on the comm queue), which always runs, so that every rank takes part in
//   every collective; its header tells the others whether its inputs were poisoned (the probe
//   did not run), and the collective fails then on every rank alike.
// Both are inline_when_ready: when the inputs are ready at the call, the calling thread runs
// them and hands the collective to the comm thread itself (no comm-lane worker in between,
// whose wake-up and hand-over cost tens of microseconds on a loaded core).
// The sequence number is taken under a mutex together with the pushes, so the sequence order
// is this rank's push order.
#include "tandem/dist/process_group.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include "comm_thread.h"
#include "nccl_process_group.h"
#include "tandem/errors.h"
#include "tandem/nd/creation.h"

namespace tandem::dist {

namespace {

std::mutex alive_mutex;
bool group_alive = false;  // guarded by alive_mutex

void check_mpi(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    throw Error(std::string("tandem::dist: ") + what + " failed: " + detail::mpi_error_text(code));
  }
}

// A torchrun-style launcher (WORLD_SIZE, RANK) starts processes that MPI does not connect: each
// would initialise as a group of one and train alone, silently. Say so instead.
void check_launcher(int mpi_size) {
  const char* world_size = std::getenv("WORLD_SIZE");
  if (world_size == nullptr || *world_size == '\0') return;
  char* end = nullptr;
  const long expected = std::strtol(world_size, &end, 10);
  if (*end != '\0' || expected == mpi_size) return;
  throw Error("tandem::dist: WORLD_SIZE=" + std::string(world_size) +
              " (a torchrun-style launcher) but MPI connects " + std::to_string(mpi_size) +
              " process(es): tandem::dist starts its processes with mpirun; run `tandem-run -np " +
              std::string(world_size) + " PROGRAM` (or mpirun -np " + std::string(world_size) +
              "), or unset WORLD_SIZE");
}

}  // namespace

ProcessGroupOptions ProcessGroupOptions::from_env() {
  ProcessGroupOptions options;
  const char* text = std::getenv("TANDEM_DIST_TIMEOUT_MS");
  if (text == nullptr || *text == '\0') return options;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value <= 0) {
    throw Error(std::string("tandem::dist: TANDEM_DIST_TIMEOUT_MS must be a positive number of "
                            "milliseconds, got '") +
                text + "'");
  }
  options.timeout = std::chrono::milliseconds(value);
  return options;
}

struct ProcessGroup::Impl {
  ProcessGroupOptions options;
  bool initialised_mpi = false;
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  MPI_Comm header_comm = MPI_COMM_NULL;
  MPI_Comm data_comm = MPI_COMM_NULL;
  // Shared with the queued ops: one that runs after the group is gone fails its collective.
  std::shared_ptr<detail::CommThread> comm;
  std::mutex push_mutex;
  std::uint64_t next_sequence = 0;  // guarded by push_mutex
  // The NCCL communicators of gpu collectives, per device ordinal, made on first use.
  std::mutex nccl_mutex;
  std::map<int, std::unique_ptr<detail::NcclProcessGroup>> nccl;  // guarded by nccl_mutex

  // Pushes the probe and the op of `collective`; reads `input`'s var (if defined) and writes
  // `output`'s.
  void queue(std::unique_ptr<detail::Collective> collective, Engine& engine, const char* name,
             Var output_var);
};

void ProcessGroup::Impl::queue(std::unique_ptr<detail::Collective> collective, Engine& engine,
                               const char* name, Var output_var) {
  const std::lock_guard<std::mutex> lock(push_mutex);
  collective->header.sequence = static_cast<std::int64_t>(next_sequence);
  Var input_var = collective->input.defined() ? collective->input.var() : Var{};
  const Var probe = engine.new_var();
  detail::Collective* raw = collective.release();
  std::vector<Var> inputs;
  if (input_var.valid()) inputs.push_back(input_var);
  std::vector<Var> probe_writes{probe};
  engine.push([raw] { raw->inputs_ok.store(true, std::memory_order_release); }, cpu(),
              VarList(inputs), VarList(probe_writes),
              {.name = "dist.probe", .queue = Queue::comm, .inline_when_ready = true});
  std::vector<Var> reads = inputs;
  reads.push_back(probe);
  std::vector<Var> writes{output_var};
  engine.push(
      [raw, thread = comm](RunContext& context) {
        std::unique_ptr<detail::Collective> owned(raw);
        owned->done = context.take_completion();
        const bool ok = owned->inputs_ok.load(std::memory_order_acquire);
        owned->header.status = ok ? detail::CollectiveHeader::kStatusOk
                                  : detail::CollectiveHeader::kStatusInputPoisoned;
        if (ok) {
          if (owned->input.defined()) owned->send = owned->input.view().data;
          if (owned->output.defined()) owned->receive = owned->output.view().data;
        }
        thread->submit(std::move(owned));
      },
      cpu(), VarList(reads), VarList(writes),
      {.name = name,
       .queue = Queue::comm,
       .async_completion = true,
       .no_skip = true,
       .inline_when_ready = true});
  engine.delete_var(probe);
  ++next_sequence;
}

ProcessGroup::ProcessGroup(ProcessGroupOptions options) : impl_(std::make_shared<Impl>()) {
  if (options.timeout.count() <= 0) {
    throw Error("tandem::dist: ProcessGroupOptions::timeout must be positive, got " +
                std::to_string(options.timeout.count()) + " ms");
  }
  impl_->options = options;
  {
    const std::lock_guard<std::mutex> lock(alive_mutex);
    if (group_alive) {
      throw Error(
          "tandem::dist: a ProcessGroup is already alive in this process; make one and "
          "share it");
    }
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (finalised) {
      throw Error(
          "tandem::dist: MPI was finalised already in this process (by an earlier "
          "ProcessGroup); MPI cannot be initialised twice, so keep one ProcessGroup for "
          "the whole program");
    }
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      // Open MPI's MPI_Finalize starts with a fence across every process of the job (a PMIx
      // barrier). After a rank has died that fence can wait for it forever, so a survivor
      // would hang at exit after reporting the error. Open MPI's own MCA parameter
      // async_mpi_finalize (ompi_info --level 9: "Do not perform a barrier at the beginning of
      // MPI_Finalize") turns the fence off; the destructor then synchronises the ranks itself,
      // with a timeout, and only while the group is healthy. Read once by MPI_Init, from the
      // environment; a value the user set is kept. Other MPI libraries ignore the variable.
      setenv("OMPI_MCA_async_mpi_finalize", "1", /*overwrite=*/0);
      int provided = 0;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
                "MPI_Init_thread");
      impl_->initialised_mpi = true;
      // The comm thread makes every MPI call after this one; the constructing thread makes
      // the finalising ones. SERIALIZED is what that needs.
      if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        throw Error("tandem::dist: the MPI library provides thread level " +
                    std::to_string(provided) +
                    ", below MPI_THREAD_SERIALIZED, which tandem's comm thread needs");
      }
    }
    group_alive = true;
  }
  try {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &impl_->rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &impl_->size), "MPI_Comm_size");
    check_launcher(impl_->size);
    // The ranks on this machine: the processes that can share memory with this one.
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, impl_->rank, MPI_INFO_NULL,
                                  &node),
              "MPI_Comm_split_type");
    MPI_Comm_rank(node, &impl_->local_rank);
    MPI_Comm_size(node, &impl_->local_size);
    MPI_Comm_free(&node);
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->header_comm), "MPI_Comm_dup");
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->data_comm), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(impl_->header_comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(impl_->data_comm, MPI_ERRORS_RETURN);
    impl_->comm = std::make_shared<detail::CommThread>(impl_->header_comm, impl_->data_comm,
                                                       impl_->rank, impl_->size, options.timeout);
  } catch (...) {
    if (impl_->initialised_mpi) MPI_Finalize();
    const std::lock_guard<std::mutex> lock(alive_mutex);
    group_alive = false;
    throw;
  }
}

ProcessGroup::~ProcessGroup() {
  {
    const std::lock_guard<std::mutex> lock(impl_->nccl_mutex);
    impl_->nccl.clear();  // waits for their collectives, destroys the communicators
  }
  std::uint64_t queued = 0;
  {
    const std::lock_guard<std::mutex> lock(impl_->push_mutex);
    queued = impl_->next_sequence;
  }
  // The collectives queued so far run once the engine reaches them; each ends within the
  // timeout once started.
  const bool drained = impl_->comm->wait_resolved(queued, 2 * impl_->options.timeout);
  const bool healthy = drained && impl_->comm->broken().empty();
  impl_->comm->stop();
  // This thread makes the last MPI calls (the comm thread has joined). A healthy group meets
  // at a closing barrier, the synchronisation MPI_Finalize's fence would have given (every rank
  // has finished its collectives, so nothing it needs is still on the wire); a broken one, whose
  // peers may be dead, finalises without meeting anyone, so a survivor exits instead of waiting
  // for a dead rank.
  if (healthy && detail::closing_barrier(impl_->data_comm, impl_->options.timeout)) {
    MPI_Comm_free(&impl_->header_comm);
    MPI_Comm_free(&impl_->data_comm);
  }
  if (impl_->initialised_mpi) MPI_Finalize();
  const std::lock_guard<std::mutex> lock(alive_mutex);
  group_alive = false;
}

int ProcessGroup::rank() const {
  return impl_->rank;
}

int ProcessGroup::size() const {
  return impl_->size;
}

int ProcessGroup::local_rank() const {
  return impl_->local_rank;
}

int ProcessGroup::local_size() const {
  return impl_->local_size;
}

const ProcessGroupOptions& ProcessGroup::options() const {
  return impl_->options;
}

std::uint64_t ProcessGroup::collectives_queued() const {
  const std::lock_guard<std::mutex> lock(impl_->push_mutex);
  return impl_->next_sequence;
}

namespace {

void check_array(const char* op, const nd::NDArray& array) {
  if (!array.defined()) throw Error(std::string("tandem::dist::") + op + ": an undefined array");
  if (detail::crosses_through_nccl(array.device())) {
    throw Error(std::string("tandem::dist::") + op + ": the array (shape " +
                array.shape().to_string() + ") is on " + to_string(array.device()) +
                "; across processes gpu arrays go through NCCL, which does allreduce and "
                "broadcast only (copy it with copyto(cpu()))");
  }
  if (array.device() != cpu()) {
    throw Error(std::string("tandem::dist::") + op + ": the array (shape " +
                array.shape().to_string() + ") is on " + to_string(array.device()) +
                "; collectives across processes take cpu arrays (copy it with copyto(cpu()))");
  }
  if (!array.is_contiguous()) {
    throw Error(std::string("tandem::dist::") + op + ": the array (shape " +
                array.shape().to_string() + ") is not contiguous; pass array.copy()");
  }
  if (array.size() > INT_MAX) {
    throw Error(std::string("tandem::dist::") + op + ": " + std::to_string(array.size()) +
                " elements is more than one MPI call carries (" + std::to_string(INT_MAX) + ")");
  }
}

std::unique_ptr<detail::Collective> make_collective(detail::CollectiveKind kind,
                                                    const nd::NDArray& array) {
  auto collective = std::make_unique<detail::Collective>();
  collective->header.kind = static_cast<std::int64_t>(kind);
  if (array.defined()) {
    collective->header.dtype = static_cast<std::int64_t>(array.dtype());
    collective->header.count = array.size();
  }
  return collective;
}

}  // namespace

detail::NcclProcessGroup* ProcessGroup::nccl_for(const nd::NDArray& array, const char* op) {
  if (!array.defined() || !detail::crosses_through_nccl(array.device())) return nullptr;
  const std::string why = detail::nccl_unusable(array);
  if (!why.empty()) {
    throw Error(std::string("tandem::dist::") + op + ": the array (shape " +
                array.shape().to_string() + ") is on " + to_string(array.device()) +
                ", and across processes gpu arrays go through NCCL, which is not usable: " + why +
                ". Copy it with copyto(cpu()) to go through MPI");
  }
  const std::lock_guard<std::mutex> lock(impl_->nccl_mutex);
  std::unique_ptr<detail::NcclProcessGroup>& group = impl_->nccl[array.device().id];
  if (group == nullptr)
    group = std::make_unique<detail::NcclProcessGroup>(*this, array.device().id);
  return group.get();
}

void ProcessGroup::allreduce(nd::NDArray& array, ReduceOp op) {
  if (detail::NcclProcessGroup* nccl = nccl_for(array, "allreduce")) {
    nccl->allreduce(array, op);
    return;
  }
  check_array("allreduce", array);
  auto collective = make_collective(detail::CollectiveKind::allreduce, array);
  collective->header.reduce_op = static_cast<std::int64_t>(op);
  collective->input = array;
  collective->output = array;
  impl_->queue(std::move(collective), array.engine(), "dist.allreduce", array.var());
}

void ProcessGroup::broadcast(nd::NDArray& array, int root) {
  if (root < 0 || root >= impl_->size) {
    throw Error("tandem::dist::broadcast: root " + std::to_string(root) +
                " is not a rank of this group of " + std::to_string(impl_->size));
  }
  if (detail::NcclProcessGroup* nccl = nccl_for(array, "broadcast")) {
    nccl->broadcast(array, root);
    return;
  }
  check_array("broadcast", array);
  auto collective = make_collective(detail::CollectiveKind::broadcast, array);
  collective->header.root = root;
  collective->input = array;
  collective->output = array;
  impl_->queue(std::move(collective), array.engine(), "dist.broadcast", array.var());
}

nd::NDArray ProcessGroup::allgather(const nd::NDArray& array) {
  check_array("allgather", array);
  std::vector<std::int64_t> dims;
  if (array.ndim() == 0) {
    dims.push_back(impl_->size);
  } else {
    for (int axis = 0; axis < array.ndim(); ++axis) dims.push_back(array.shape()[axis]);
    dims[0] *= impl_->size;
  }
  nd::NDArray output = nd::empty(nd::Shape(dims.begin(), dims.end()), array.dtype(), cpu());
  auto collective = make_collective(detail::CollectiveKind::allgather, array);
  collective->input = array;
  collective->output = output;
  impl_->queue(std::move(collective), array.engine(), "dist.allgather", output.var());
  return output;
}

void ProcessGroup::barrier() {
  Engine& engine = Engine::get();
  const Var done = engine.new_var();
  impl_->queue(make_collective(detail::CollectiveKind::barrier, nd::NDArray{}), engine,
               "dist.barrier", done);
  try {
    engine.wait_for_var(done);
  } catch (...) {
    engine.delete_var(done);
    throw;
  }
  engine.delete_var(done);
}

}  // namespace tandem::dist
