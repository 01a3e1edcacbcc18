// PushSystem: what a system must offer to run the engine workloads written once for all of
// them (workloads.h): vars, push an op that reads and writes some of them, and wait for all.
//
// tandem (threaded and naive), StarPU and the plain queue are push systems. oneTBB's flow graph
// is not: it expresses a dependency structure as a graph built up front, so it gets its own
// version of each workload (tbb_flow_workloads.h).
#pragma once

#include <concepts>
#include <cstddef>
#include <span>

#include "busy_work.h"

namespace tandem::bench {

template <class S>
concept PushSystem = requires(S& system, const typename S::VarSet& set, Work work,
                              std::span<const typename S::Var> vars) {
  // A set of `n` vars, freed when the VarSet is destroyed.
  { system.make_vars(std::size_t{}) } -> std::same_as<typename S::VarSet>;
  { set.handles() } -> std::same_as<std::span<const typename S::Var>>;
  // Queues an op running `work` after the earlier ops on its vars (the plain queue ignores the
  // vars: it runs every op as soon as a worker is free).
  system.push(work, /*reads=*/vars, /*writes=*/vars);
  system.wait_all();
};

}  // namespace tandem::bench
