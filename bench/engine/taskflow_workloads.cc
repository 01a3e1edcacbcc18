#include "taskflow_workloads.h"

#include <stdexcept>

#ifdef TANDEM_BENCH_HAVE_TASKFLOW
#include <taskflow/taskflow.hpp>

#include <algorithm>
#include <memory>
#include <vector>
#endif

namespace tandem::bench {

#ifdef TANDEM_BENCH_HAVE_TASKFLOW

namespace {

std::unique_ptr<tf::Executor>& executor_slot() {
  static std::unique_ptr<tf::Executor> executor;
  return executor;
}

tf::Executor& executor() {
  std::unique_ptr<tf::Executor>& slot = executor_slot();
  if (!slot) throw std::logic_error("taskflow_start was not called");
  return *slot;
}

// A graph of `count` tasks running `work`, in a vector so that task i is tasks[i].
struct TaskGraph {
  tf::Taskflow flow;
  std::vector<tf::Task> tasks;

  explicit TaskGraph(std::size_t count) { tasks.reserve(count); }
  tf::Task& add(Work work) {
    return tasks.emplace_back(flow.emplace([work] { run_work(work); }));
  }
  void run() { executor().run(flow).wait(); }
};

}  // namespace

bool taskflow_available() {
  return true;
}

std::string taskflow_version() {
  std::string version = tf::version();
#ifdef TANDEM_BENCH_TASKFLOW_COMMIT
  version += std::string(" (") + TANDEM_BENCH_TASKFLOW_COMMIT + ")";
#endif
  return version;
}

void taskflow_start(int workers) {
  std::unique_ptr<tf::Executor>& slot = executor_slot();
  if (!slot) slot = std::make_unique<tf::Executor>(static_cast<std::size_t>(workers));
}

Nanoseconds taskflow_writes_round_robin(std::size_t ops, std::size_t num_vars) {
  TaskGraph g(ops);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < ops; ++i) {
    tf::Task& task = g.add(Work{});
    if (i >= num_vars) g.tasks[i - num_vars].precede(task);
  }
  g.run();
  return since(start);
}

Nanoseconds taskflow_fan_out(std::size_t rounds, std::size_t reads_per_write) {
  TaskGraph g(rounds * (1 + reads_per_write));
  const auto start = Clock::now();
  for (std::size_t round = 0; round < rounds; ++round) {
    const std::size_t first_previous_read = round == 0 ? 0 : g.tasks.size() - reads_per_write;
    const std::size_t write = g.tasks.size();
    g.add(Work{});
    for (std::size_t i = 0; round > 0 && i < reads_per_write; ++i) {
      g.tasks[first_previous_read + i].precede(g.tasks[write]);
    }
    for (std::size_t i = 0; i < reads_per_write; ++i) {
      tf::Task read = g.add(Work{});
      g.tasks[write].precede(read);
    }
  }
  g.run();
  return since(start);
}

Nanoseconds taskflow_push_cost(std::size_t ops) {
  tf::Executor& pool = executor();
  const auto start = Clock::now();
  for (std::size_t i = 0; i < ops; ++i) pool.silent_async([] { run_work(Work{}); });
  const Nanoseconds elapsed = since(start);
  pool.wait_for_all();
  return elapsed;
}

Nanoseconds taskflow_task_bench(const TaskBenchPattern& pattern, std::size_t width,
                                std::size_t steps, Work work) {
  TaskGraph g(width * steps);
  const auto start = Clock::now();
  for (std::size_t t = 0; t < steps; ++t) {
    const std::size_t row = t * width;  // index of task (t, 0)
    for (std::size_t x = 0; x < width; ++x) {
      tf::Task& task = g.add(work);
      if (t == 0 || !pattern.has_dependencies()) continue;
      for (std::size_t y = pattern.first(x); y <= pattern.last(x, width); ++y)
        g.tasks[row - width + y].precede(task);
    }
  }
  g.run();
  return since(start);
}

Nanoseconds taskflow_chain_plus_independent(std::size_t batches, Work compute, Work copy) {
  TaskGraph g(2 * batches);
  const auto start = Clock::now();
  // Task 2i is copy i, task 2i + 1 compute i (see run_chain_plus_independent).
  for (std::size_t i = 0; i < batches; ++i) {
    tf::Task& copy_task = g.add(copy);
    if (i >= 2) g.tasks[2 * (i - 2) + 1].precede(copy_task);
    tf::Task& step = g.add(compute);
    copy_task.precede(step);
    if (i >= 1) g.tasks[2 * (i - 1) + 1].precede(step);
  }
  g.run();
  return since(start);
}

#else  // no Taskflow: the suite never calls these (taskflow_available() is false)

namespace {
[[noreturn]] Nanoseconds unavailable() {
  throw std::logic_error("bench_engine was built without Taskflow (set TASKFLOW_DIR)");
}
}  // namespace

bool taskflow_available() {
  return false;
}
std::string taskflow_version() {
  return "";
}
void taskflow_start(int) {
  unavailable();
}
Nanoseconds taskflow_writes_round_robin(std::size_t, std::size_t) {
  return unavailable();
}
Nanoseconds taskflow_fan_out(std::size_t, std::size_t) {
  return unavailable();
}
Nanoseconds taskflow_push_cost(std::size_t) {
  return unavailable();
}
Nanoseconds taskflow_task_bench(const TaskBenchPattern&, std::size_t, std::size_t, Work) {
  return unavailable();
}
Nanoseconds taskflow_chain_plus_independent(std::size_t, Work, Work) {
  return unavailable();
}

#endif

}  // namespace tandem::bench
