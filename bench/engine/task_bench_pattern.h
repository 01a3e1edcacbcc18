// TaskBenchPattern: which tasks of the previous time step a task depends on, for the METG
// workloads (Slaughter et al., "Task Bench", SC'20; the names are Task Bench's).
//
// A task graph is `width` columns advancing `steps` time steps; task (t, x) depends on the
// tasks (t-1, y) for y in `dependencies(x)`, a contiguous range clipped to the columns:
// - stencil_1d: y = x-1, x, x+1 (3 dependencies in the interior);
// - nearest:    Task Bench's `nearest` with radix 5: y = x-2 .. x+2 (5 in the interior). With
//               Task Bench's default radix of 3 it is the same graph as stencil_1d, so the
//               benchmark takes 5 to add a denser pattern;
// - trivial:    no dependencies: every task may run as soon as it is pushed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace tandem::bench {

struct TaskBenchPattern {
  std::string name;   // as in Task Bench: stencil_1d, nearest, trivial
  std::size_t radix;  // dependencies of an interior task (0: none)

  bool has_dependencies() const { return radix > 0; }
  // Task (t, x) depends on (t-1, first) .. (t-1, last). Only if has_dependencies().
  std::size_t first(std::size_t x) const { return x - std::min(x, (radix - 1) / 2); }
  std::size_t last(std::size_t x, std::size_t width) const {
    return std::min(x + radix / 2, width - 1);
  }
  // The workload's name in bench_engine and in engine.json.
  std::string workload() const { return "metg_" + name; }
};

inline const std::vector<TaskBenchPattern>& task_bench_patterns() {
  static const std::vector<TaskBenchPattern> patterns = {
      {"stencil_1d", 3}, {"nearest", 5}, {"trivial", 0}};
  return patterns;
}

}  // namespace tandem::bench
