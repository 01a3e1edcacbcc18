// PlainQueue: the floor the engine is measured against. A mutex and a condition variable
// around a FIFO of ops, served by `workers` threads; no dependency tracking at all, so it is
// only a valid peer for workloads whose ops are independent (`independent`, `push_cost`).
// It is what a competent programmer writes in ten minutes, not a tuned queue.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "busy_work.h"

namespace tandem::bench {

class PlainQueue {
 public:
  // The queue tracks no vars; a VarSet only gives the workloads something to index.
  using Var = std::uint32_t;
  class VarSet {
   public:
    explicit VarSet(std::size_t count) : vars_(count) {}
    std::span<const Var> handles() const { return vars_; }

   private:
    std::vector<Var> vars_;
  };

  explicit PlainQueue(int workers);
  ~PlainQueue();  // finishes queued ops, then joins the workers
  PlainQueue(const PlainQueue&) = delete;
  PlainQueue& operator=(const PlainQueue&) = delete;

  VarSet make_vars(std::size_t count) { return VarSet(count); }
  void push(Work work, std::span<const Var> reads, std::span<const Var> writes);
  void wait_all();

 private:
  void serve();

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable all_done_;
  std::deque<Work> queue_;
  std::size_t unfinished_ = 0;  // queued or running
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tandem::bench
