// StarpuSystem: StarPU 1.3 seen as a PushSystem, written from StarPU's documented C API.
//
// One data handle per var (`starpu_variable_data_register` over a uint64 in main memory), one
// codelet with a CPU function, and one task per op whose buffers are its writes (STARPU_RW)
// and reads (STARPU_R). StarPU's sequential consistency (on by default) then infers the same
// dependencies tandem tracks: accesses to a handle are ordered as submitted, reads may run
// together.
//
// StarPU's idle workers poll for tasks in a tight loop (starpu.h says so at starpu_pause), which
// on a 2-core machine would steal the cores from every other system in this process. So StarPU
// is kept paused except while it runs a workload: the first push resumes it, wait_all pauses it
// again once every task has finished.
#pragma once

#include <starpu.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "busy_work.h"

namespace tandem::bench {

class StarpuSystem {
 public:
  using Var = starpu_data_handle_t;

  class VarSet {
   public:
    explicit VarSet(std::size_t count);
    VarSet(VarSet&& other) noexcept = default;
    VarSet& operator=(VarSet&&) = delete;
    ~VarSet();  // unregisters the handles (which waits for their tasks)
    std::span<const Var> handles() const { return handles_; }

   private:
    std::unique_ptr<std::uint64_t[]> storage_;
    std::vector<Var> handles_;
  };

  // Starts StarPU with `cpu_workers` CPU workers and no accelerators. StarPU is a process-wide
  // runtime: create one StarpuSystem per process.
  explicit StarpuSystem(int cpu_workers);
  ~StarpuSystem();
  StarpuSystem(const StarpuSystem&) = delete;
  StarpuSystem& operator=(const StarpuSystem&) = delete;

  VarSet make_vars(std::size_t count) { return VarSet(count); }
  void push(Work work, std::span<const Var> reads, std::span<const Var> writes);
  void wait_all();  // then pauses the workers

  // Lets the workers poll with nothing to do, as they do in an application that never calls
  // starpu_pause (the idle_cpu workload measures that). The next wait_all pauses them again.
  void resume_idle_polling();

  // The scheduling policy StarPU runs with (its default unless STARPU_SCHED is set).
  std::string scheduler() const;

 private:
  void resume_if_paused() {
    if (paused_) {
      starpu_resume();
      paused_ = false;
    }
  }

  starpu_codelet codelet_{};
  bool paused_ = false;
};

}  // namespace tandem::bench
