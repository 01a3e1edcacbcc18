#include "tbb_flow_workloads.h"

#include <oneapi/tbb/flow_graph.h>

#include <algorithm>
#include <deque>

namespace tandem::bench {

namespace {

using tbb::flow::continue_msg;
using Task = tbb::flow::continue_node<continue_msg>;

// The graph and its nodes. A deque, because nodes can be neither copied nor moved once they
// have edges, and a deque never relocates its elements as it grows.
struct TaskGraph {
  tbb::flow::graph graph;
  std::deque<Task> tasks;  // declared after `graph`, so destroyed before it

  Task& add(Work work) {
    return tasks.emplace_back(graph, [work](const continue_msg&) {
      run_work(work);
      return continue_msg();
    });
  }
};

}  // namespace

Nanoseconds tbb_flow_writes_round_robin(std::size_t ops, std::size_t num_vars) {
  TaskGraph g;
  const auto start = Clock::now();
  for (std::size_t i = 0; i < ops; ++i) {
    Task& task = g.add(Work{});
    if (i >= num_vars) tbb::flow::make_edge(g.tasks[i - num_vars], task);
  }
  const std::size_t roots = std::min(ops, num_vars);
  for (std::size_t i = 0; i < roots; ++i) g.tasks[i].try_put(continue_msg());
  g.graph.wait_for_all();
  return since(start);
}

Nanoseconds tbb_flow_fan_out(std::size_t rounds, std::size_t reads_per_write) {
  TaskGraph g;
  const auto start = Clock::now();
  for (std::size_t round = 0; round < rounds; ++round) {
    const std::size_t first_previous_read = round == 0 ? 0 : g.tasks.size() - reads_per_write;
    Task& write = g.add(Work{});
    for (std::size_t i = 0; round > 0 && i < reads_per_write; ++i) {
      tbb::flow::make_edge(g.tasks[first_previous_read + i], write);
    }
    for (std::size_t i = 0; i < reads_per_write; ++i) tbb::flow::make_edge(write, g.add(Work{}));
  }
  if (rounds > 0) g.tasks.front().try_put(continue_msg());
  g.graph.wait_for_all();
  return since(start);
}

Nanoseconds tbb_flow_push_cost(std::size_t ops) {
  TaskGraph g;
  const auto start = Clock::now();
  for (std::size_t i = 0; i < ops; ++i) g.add(Work{}).try_put(continue_msg());
  const Nanoseconds elapsed = since(start);
  g.graph.wait_for_all();
  return elapsed;
}

Nanoseconds tbb_flow_task_bench(const TaskBenchPattern& pattern, std::size_t width,
                                std::size_t steps, Work work) {
  TaskGraph g;
  const auto start = Clock::now();
  for (std::size_t t = 0; t < steps; ++t) {
    const std::size_t row = t * width;  // index of task (t, 0)
    for (std::size_t x = 0; x < width; ++x) {
      Task& task = g.add(work);
      if (t == 0 || !pattern.has_dependencies()) continue;
      for (std::size_t y = pattern.first(x); y <= pattern.last(x, width); ++y)
        tbb::flow::make_edge(g.tasks[row - width + y], task);
    }
  }
  // Every task without a predecessor gets its start message.
  const std::size_t roots =
      pattern.has_dependencies() ? std::min(width, g.tasks.size()) : g.tasks.size();
  for (std::size_t i = 0; i < roots; ++i) g.tasks[i].try_put(continue_msg());
  g.graph.wait_for_all();
  return since(start);
}

Nanoseconds tbb_flow_chain_plus_independent(std::size_t batches, Work compute, Work copy) {
  TaskGraph g;
  const auto start = Clock::now();
  // Task 2i is copy i, task 2i + 1 compute i (see run_chain_plus_independent).
  for (std::size_t i = 0; i < batches; ++i) {
    Task& copy_task = g.add(copy);
    if (i >= 2) tbb::flow::make_edge(g.tasks[2 * (i - 2) + 1], copy_task);
    Task& step = g.add(compute);
    tbb::flow::make_edge(copy_task, step);
    if (i >= 1) tbb::flow::make_edge(g.tasks[2 * (i - 1) + 1], step);
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(batches, 2); ++i)
    g.tasks[2 * i].try_put(continue_msg());
  g.graph.wait_for_all();
  return since(start);
}

}  // namespace tandem::bench
