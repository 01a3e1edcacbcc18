#include "starpu_system.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace tandem::bench {

namespace {

void check(int rc, const char* call) {
  if (rc != 0) {
    throw std::runtime_error(std::string("StarPU: ") + call + " failed: " + std::strerror(-rc));
  }
}

// The CPU implementation of every benchmark task. The op's Work travels in the cl_arg pointer
// itself (with cl_arg_size 0 StarPU passes the pointer through untouched), so submitting a
// task allocates no argument buffer.
void run_task(void* /*buffers*/[], void* cl_arg) {
  run_work(Work{static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(cl_arg))});
}

}  // namespace

StarpuSystem::VarSet::VarSet(std::size_t count)
    : storage_(std::make_unique<std::uint64_t[]>(count)), handles_(count) {
  for (std::size_t i = 0; i < count; ++i) {
    starpu_variable_data_register(&handles_[i], STARPU_MAIN_RAM,
                                  reinterpret_cast<std::uintptr_t>(&storage_[i]),
                                  sizeof(std::uint64_t));
  }
}

StarpuSystem::VarSet::~VarSet() {
  for (Var handle : handles_) starpu_data_unregister(handle);
}

StarpuSystem::StarpuSystem(int cpu_workers) {
  // Keep StarPU quiet about the performance models we deliberately do not give it; the
  // benchmark tasks are empty or fixed-length busy loops.
  setenv("STARPU_SILENT", "1", /*overwrite=*/0);
  starpu_conf conf;
  check(starpu_conf_init(&conf), "starpu_conf_init");
  conf.ncpus = cpu_workers;
  conf.ncuda = 0;
  conf.nopencl = 0;
  // Worker counts must match the other systems even if STARPU_NCPU is set in the environment.
  conf.precedence_over_environment_variables = 1;
  check(starpu_init(&conf), "starpu_init");

  starpu_codelet_init(&codelet_);
  codelet_.where = STARPU_CPU;
  codelet_.cpu_funcs[0] = run_task;
  codelet_.nbuffers = STARPU_VARIABLE_NBUFFERS;  // each task says how many (task->nbuffers)
  codelet_.name = "bench_op";
  starpu_pause();
  paused_ = true;
}

StarpuSystem::~StarpuSystem() {
  resume_if_paused();  // hand StarPU back to shutdown as starpu_init left it
  starpu_task_wait_for_all();
  starpu_shutdown();
}

void StarpuSystem::push(Work work, std::span<const Var> reads, std::span<const Var> writes) {
  const std::size_t buffers = reads.size() + writes.size();
  if (buffers > STARPU_NMAXBUFS) {
    throw std::invalid_argument("StarPU: a benchmark op uses " + std::to_string(buffers) +
                                " vars; this StarPU build allows at most " +
                                std::to_string(STARPU_NMAXBUFS) + " per task");
  }
  resume_if_paused();
  starpu_task* task = starpu_task_create();  // destroyed by StarPU once it has run
  task->cl = &codelet_;
  task->cl_arg = reinterpret_cast<void*>(static_cast<std::uintptr_t>(work.spin_iterations));
  task->nbuffers = static_cast<int>(buffers);
  int index = 0;
  for (Var handle : writes) {
    task->handles[index] = handle;
    task->modes[index++] = STARPU_RW;
  }
  for (Var handle : reads) {
    task->handles[index] = handle;
    task->modes[index++] = STARPU_R;
  }
  check(starpu_task_submit(task), "starpu_task_submit");
}

void StarpuSystem::wait_all() {
  check(starpu_task_wait_for_all(), "starpu_task_wait_for_all");
  if (!paused_) {
    starpu_pause();
    paused_ = true;
  }
}

void StarpuSystem::resume_idle_polling() {
  resume_if_paused();
}

std::string StarpuSystem::scheduler() const {
  // Context 0 is the one starpu_init creates over every worker.
  const starpu_sched_policy* policy = starpu_sched_ctx_get_sched_policy(0);
  return policy != nullptr && policy->policy_name != nullptr ? policy->policy_name : "unknown";
}

}  // namespace tandem::bench
