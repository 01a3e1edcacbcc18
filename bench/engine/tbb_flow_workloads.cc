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

Nanoseconds tbb_flow_stencil_1d(std::size_t width, std::size_t steps, Work work) {
  TaskGraph g;
  const auto start = Clock::now();
  for (std::size_t t = 0; t < steps; ++t) {
    const std::size_t row = t * width;  // index of task (t, 0)
    for (std::size_t x = 0; x < width; ++x) {
      Task& task = g.add(work);
      if (t == 0) continue;
      const std::size_t first = x == 0 ? 0 : x - 1;
      const std::size_t last = std::min(x + 1, width - 1);
      for (std::size_t y = first; y <= last; ++y)
        tbb::flow::make_edge(g.tasks[row - width + y], task);
    }
  }
  for (std::size_t x = 0; x < std::min(width, g.tasks.size()); ++x)
    g.tasks[x].try_put(continue_msg());
  g.graph.wait_for_all();
  return since(start);
}

}  // namespace tandem::bench
