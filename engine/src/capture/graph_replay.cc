// Replaying a captured graph (captured_graph.h): each step in capture order, an inline segment
// as one unit op whose GraphRun runs the segment's ops from the DAG resolved at capture, a
// device graph run as one accelerator op that launches its device graph (device_graph_run.h).
//
// The unit is an ordinary op for the engine (one push ticket, queued on its held vars, counted
// in flight, waited for by wait_all), with three differences, all set here:
// - `no_skip`: a poisoned input skips the segment's ops that read it, not the whole unit;
// - `keeps_poison` on its slots: each node sets the poison of what it writes as it finishes
//   (EngineCore::finish leaves the unit's vars alone);
// - `async_completion`: the unit ends when the last of its nodes has, on whichever runner
//   thread that is, not when the body that starts the run returns.
// Its nodes take the unit's push sequence and their position in the segment as the push order
// of their errors (ErrorRecord::graph_position), so "oldest error wins" and wait_all's order are
// those of separate pushes.
//
// Runners: the unit's body, plus, when the segment is wide and its nodes long enough to pay for
// it (the cost model: ns_per_node measured on the previous replay), helper ops pushed with no
// var that run nodes of the same GraphRun. A node's successors lose one predecessor when it
// ends; the runner that brings one to zero runs it next or, if it has one already, shares it
// through the run's ready list. A runner that finds nothing ready spins briefly and leaves;
// the runner whose settled count reaches the segment's size invokes the unit's Completion.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/spin_lock.h"
#include "captured_graph.h"
#include "engine_core.h"
#include "profiler/profiler_recorder.h"

namespace tandem::detail {

namespace {

constexpr std::uint32_t kNoNode = ~0u;
// Nodes a runner finishes before it publishes them (one atomic per batch, not per node).
constexpr std::uint32_t kSettleBatch = 32;
// Rounds a runner looks for ready nodes, while some are unfinished, before it leaves.
constexpr int kIdleRounds = 256;
// Helpers are worth their push and their contention on the run's counters (a cache-line
// transfer per node that crosses runners, ~100 ns here) only for nodes well above that. Not
// tuned yet: on the shared 2-core machine, runs with helpers always on and with this threshold
// could not be told apart from the noise.
constexpr std::uint32_t kHelperWorthNs = 300;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// One replay of one inline segment.
class GraphRun : public std::enable_shared_from_this<GraphRun> {
 public:
  GraphRun(EngineCore& core, std::shared_ptr<GraphPlan> plan, const InlineSegment& segment,
           std::shared_ptr<OpRecord*[]> bodies)
      : core_(core),
        plan_(std::move(plan)),
        segment_(segment),
        nodes_(plan_->nodes.data() + segment.first_node),
        bodies_(std::move(bodies)),
        pending_(new std::atomic<std::uint32_t>[segment.size]),
        unsettled_(segment.size) {
    for (std::uint32_t i = 0; i < segment.size; ++i) {
      pending_[i].store(segment.predecessors[i], std::memory_order_relaxed);
    }
    ready_.reserve(segment.size);
  }

  // The unit's body: it holds every var of the segment now.
  void start(RunContext& ctx) {
    OpRecord* unit = current_op();
    sequence_ = unit->push_sequence;
    parity_ = unit->epoch_parity;
    completion_ = ctx.take_completion();
    if (unit->needs_fence_sync.load(std::memory_order_relaxed)) [[unlikely]]
      collect_fence_errors();
    const std::uint32_t measured = segment_.ns_per_node.load(std::memory_order_relaxed);
    const int workers = core_.cpu_workers();
    if (workers > 1 && segment_.max_width > 1 && (measured == 0 || measured >= kHelperWorthNs)) {
      const auto helpers =
          std::min<std::uint32_t>(static_cast<std::uint32_t>(workers - 1), segment_.max_width - 1);
      push_helpers(helpers);
    }
    const std::int64_t begin = now_ns();
    const std::uint32_t ran = run_nodes(ctx.worker());
    if (ran > 0) {
      const auto per_node = static_cast<std::uint32_t>(
          std::min<std::int64_t>((now_ns() - begin) / ran, std::int64_t{1} << 30));
      segment_.ns_per_node.store(std::max<std::uint32_t>(per_node, 1), std::memory_order_relaxed);
    }
  }

 private:
  // The failed device writes still fencing the vars the unit only reads (settle_fences waited
  // for them and left them in place): a node reading such a var skips, as a pushed CPU op would.
  void collect_fence_errors() {
    for (const HeldVar& held : segment_.held) {
      if (held.write) continue;
      VarState* var = held.var.state();
      DeviceWorkRef work;
      var->lock.lock();
      if (var->fenced && !var->poison) work = var->fences->write;
      var->lock.unlock();
      if (!work) continue;
      if (ErrorRef error = core_.device_error(*work)) fence_errors_.emplace_back(var, error);
    }
  }

  void push_helpers(std::uint32_t helpers) noexcept {
    for (std::uint32_t i = 0; i < helpers; ++i) {
      try {
        OpRecord* op = acquire_op_record();
        op->set_callable(
            [run = shared_from_this()](RunContext& ctx) { run->run_nodes(ctx.worker()); });
        core_.submit(op, cpu(), {}, {}, OpProps{.name = "graph replay helper"});
      } catch (...) {
        return;  // no memory: the runners there are finish the segment
      }
    }
  }

  // Runs ready nodes until none is left; returns how many it ran.
  std::uint32_t run_nodes(int worker) noexcept {
    std::uint32_t ran = 0, unsettled = 0, next = kNoNode;
    int idle = 0;
    for (;;) {
      if (next == kNoNode) next = claim();
      if (next == kNoNode) {
        if (unsettled > 0) {
          if (settle(unsettled)) return ran;
          unsettled = 0;
        }
        if (unsettled_.load(std::memory_order_acquire) == 0 || ++idle > kIdleRounds) return ran;
        if (idle < 64) {
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
        continue;
      }
      idle = 0;
      core_.run_replayed_node(nodes_[next], bodies_ ? bodies_[segment_.first_node + next] : nullptr,
                              sequence_, next, parity_, worker,
                              fence_errors_.empty() ? nullptr : &fence_errors_);
      ++ran;
      const std::uint32_t end = segment_.successor_begin[next + 1];
      std::uint32_t follow = kNoNode;
      for (std::uint32_t e = segment_.successor_begin[next]; e < end; ++e) {
        const std::uint32_t successor = segment_.successors[e];
        // A node with one predecessor is reached by this runner alone: no atomic needed.
        if (segment_.predecessors[successor] != 1 &&
            pending_[successor].fetch_sub(1, std::memory_order_acq_rel) != 1)
          continue;
        if (follow == kNoNode) {
          follow = successor;
        } else {
          share(successor);
        }
      }
      next = follow;
      if (++unsettled == kSettleBatch) {
        if (settle(unsettled)) return ran;
        unsettled = 0;
      }
    }
  }

 private:
  std::uint32_t claim() noexcept {
    const auto roots = static_cast<std::uint32_t>(segment_.roots.size());
    if (next_root_.load(std::memory_order_relaxed) < roots) {
      const std::uint32_t i = next_root_.fetch_add(1, std::memory_order_relaxed);
      if (i < roots) return segment_.roots[i];
    }
    if (shared_.load(std::memory_order_acquire) == 0) return kNoNode;
    ready_lock_.lock();
    std::uint32_t node = kNoNode;
    if (!ready_.empty()) {
      node = ready_.back();
      ready_.pop_back();
      shared_.fetch_sub(1, std::memory_order_relaxed);
    }
    ready_lock_.unlock();
    return node;
  }

  void share(std::uint32_t node) noexcept {
    ready_lock_.lock();
    ready_.push_back(node);  // reserved for every node: never allocates
    shared_.fetch_add(1, std::memory_order_release);
    ready_lock_.unlock();
  }

  // Publishes `count` finished nodes; the runner that finishes the segment ends the unit.
  bool settle(std::uint32_t count) noexcept {
    if (unsettled_.fetch_sub(count, std::memory_order_acq_rel) != count) return false;
    completion_();
    return true;
  }

  EngineCore& core_;
  std::shared_ptr<GraphPlan> plan_;
  const InlineSegment& segment_;
  OpRecord* const* nodes_;
  // Automatic capture: the records whose closures the nodes run (by plan index); null: their own.
  std::shared_ptr<OpRecord*[]> bodies_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> pending_;
  std::uint64_t sequence_ = 0;
  std::uint8_t parity_ = 0;
  Completion completion_;
  EngineCore::FenceErrors fence_errors_;  // written before any node runs
  alignas(64) std::atomic<std::uint32_t> next_root_{0};
  alignas(64) std::atomic<std::uint32_t> unsettled_;
  alignas(64) std::atomic<std::uint32_t> shared_{0};
  SpinLock ready_lock_;
  std::vector<std::uint32_t> ready_;
};

void EngineCore::prepare_recorded(OpRecord* op, Device device, VarList reads, VarList writes,
                                  const OpProps& props) {
  prepare(op, device, reads, writes, props);
  if constexpr (profiling::kHooksCompiled) op->profile_id = 0;  // replays are profiled per unit
}

void EngineCore::run_replayed_node(OpRecord* node, OpRecord* body, std::uint64_t sequence,
                                   std::uint32_t position, std::uint8_t parity, int worker,
                                   const FenceErrors* fence_errors) noexcept {
  ErrorRef outcome;
  if (!node->props.no_skip) {
    const ErrorRef* oldest = oldest_poison(node, nullptr);
    if (fence_errors != nullptr) [[unlikely]] {
      for (const auto& [var, error] : *fence_errors) {
        for (std::uint32_t i = 0; i < node->num_slots; ++i) {
          if (node->slots[i].var == var && node->slots[i].reads_value &&
              (oldest == nullptr || pushed_before(*error, **oldest))) {
            oldest = &error;
          }
        }
      }
    }
    if (oldest != nullptr) {
      ops_skipped_.fetch_add(1, std::memory_order_relaxed);
      outcome = *oldest;
    }
  }
  if (!outcome) {
    // What an op pushed from inside this one reads from its parent (take_ticket).
    node->epoch_parity = parity;
    OpRecord* outer = tls_current_op;
    tls_current_op = node;
    std::exception_ptr error;
    RunContext ctx(node, worker);
    try {
      (body != nullptr ? body : node)->run(ctx);
    } catch (...) {
      error = std::current_exception();
    }
    if (body != nullptr) body->destroy_callable();  // still inside the op (destroy_callable_inside)
    tls_current_op = outer;
    if (error) [[unlikely]] {
      ops_failed_.fetch_add(1, std::memory_order_relaxed);
      auto record = std::make_shared<ErrorRecord>(
          wrap_op_error(node->props.name, node->device, error), sequence);
      record->graph_position = position;
      errors_.record(record);
      outcome = std::move(record);
    }
  }
  if (body != nullptr) {
    if (body->destroy != nullptr) {
      // Skipped: the closure is destroyed as part of the node, as skip() does for an op (a push
      // from its captures' destructors reads the node, prepared, as its parent).
      node->epoch_parity = parity;
      OpRecord* outer = tls_current_op;
      tls_current_op = node;
      body->destroy_callable();
      tls_current_op = outer;
    }
    if (body != node) release_op_record(body);
  }
  for (std::uint32_t i = 0; i < node->num_slots; ++i) {
    const VarSlot& slot = node->slots[i];
    if (slot.write && slot.var->poison != outcome) slot.var->poison = outcome;
  }
}

void EngineCore::replay_segment(const std::shared_ptr<GraphPlan>& plan,
                                const InlineSegment& segment, std::shared_ptr<OpRecord*[]> bodies) {
  auto run = std::make_shared<GraphRun>(*this, plan, segment, std::move(bodies));
  OpRecord* unit = acquire_op_record();
  try {
    unit->set_callable([run = std::move(run)](RunContext& ctx) { run->start(ctx); });
    const auto n = static_cast<std::uint32_t>(segment.held.size());
    if (n > OpRecord::kInlineSlots) unit->slots = new VarSlot[n];
  } catch (...) {
    discard(unit);
    throw;
  }
  for (std::uint32_t i = 0; i < segment.held.size(); ++i) {
    const HeldVar& held = segment.held[i];
    unit->slots[i] = VarSlot{held.var.state(), nullptr, unit, held.write, held.reads_value, true};
  }
  unit->num_slots = static_cast<std::uint32_t>(segment.held.size());
  unit->device = cpu();
  unit->props = OpProps{.name = "graph replay",
                        .priority = segment.priority,
                        .async_completion = true,
                        .no_skip = true};
  unit->sink = this;
  if (profiling::enabled()) [[unlikely]]
    profiling::on_push(unit);  // the profiler sees the segment as one op, "graph replay"
  submit_prepared(unit);
}

void EngineCore::replay(const std::shared_ptr<GraphPlan>& plan) {
  // Every var first, so that a deleted one enters nothing.
  auto check = [&](Var var, const OpRecord* op) {
    const VarState* state = var.state();
    if (state->generation.load(std::memory_order_relaxed) != var.generation() ||
        state->owner.load(std::memory_order_relaxed) != owner_) [[unlikely]] {
      throw Error(std::string("tandem: CapturedGraph::replay: a var of op '") + op->props.name +
                  "' was deleted (delete_var) after the capture; a graph's vars must outlive "
                  "it (capture again after replacing the var)");
    }
  };
  for (const GraphStep& step : plan->steps) {
    if (step.is_inline) {
      const InlineSegment& segment = *plan->segments[step.index];
      for (const HeldVar& held : segment.held) check(held.var, plan->nodes[segment.first_node]);
    } else {
      const PushedNode& pushed = plan->pushed[step.index];
      for (Var var : pushed.reads) check(var, plan->nodes[pushed.node]);
      for (Var var : pushed.writes) check(var, plan->nodes[pushed.node]);
    }
  }
  replay_steps(plan, nullptr);
}

void EngineCore::replay_window(const std::shared_ptr<GraphPlan>& plan,
                               std::shared_ptr<OpRecord*[]> bodies) {
  replay_steps(plan, bodies);
}

void EngineCore::push_window_node(const std::shared_ptr<GraphPlan>& plan, std::uint32_t n,
                                  OpRecord* body) {
  OpRecord* node = plan->nodes[n];
  std::vector<Var> reads, writes;
  for (std::uint32_t s = 0; s < node->num_slots; ++s) {
    const VarSlot& slot = node->slots[s];
    const Var var(slot.var, slot.var->generation.load(std::memory_order_relaxed));
    if (slot.write) writes.push_back(var);
    if (slot.reads_value) reads.push_back(var);
  }
  if (body != node) {
    submit(body, node->device, reads, writes, node->props);
    return;
  }
  OpRecord* op = acquire_op_record();
  op->set_callable([plan, node](RunContext& ctx) {
    node->run(ctx);
    node->destroy_callable();
  });
  submit(op, node->device, reads, writes, node->props);
}

void EngineCore::replay_steps(const std::shared_ptr<GraphPlan>& plan,
                              const std::shared_ptr<OpRecord*[]>& bodies) {
  for (const GraphStep& step : plan->steps) {
    if (step.is_inline) {
      replay_segment(plan, *plan->segments[step.index], bodies);
      continue;
    }
    const PushedNode& pushed = plan->pushed[step.index];
    OpRecord* node = plan->nodes[pushed.node];
    if (bodies != nullptr) {
      // Automatic capture: a closure pushed this time is pushed as it was. A device graph runs
      // the recorded closures, so a run of accelerator ops is pushed op by op instead, each
      // with its node's vars, as eagerly.
      for (std::uint32_t n = pushed.node; n < pushed.node + pushed.size(); ++n) {
        push_window_node(plan, n, bodies[n]);
      }
      continue;
    }
    OpRecord* op = acquire_op_record();
    if (pushed.device_graph) {
      op->set_callable([plan, run = pushed.device_graph.get()](RunContext& ctx) {
        launch_device_graph_run(*run, plan->nodes.data(), ctx);
      });
      int priority = node->props.priority;
      for (std::uint32_t n = pushed.node; n < pushed.node + pushed.size(); ++n) {
        priority = std::max(priority, plan->nodes[n]->props.priority);
      }
      submit(op, node->device, pushed.reads, pushed.writes,
             OpProps{.name = "device graph", .queue = node->props.queue, .priority = priority});
      continue;
    }
    op->set_callable([plan, node](RunContext& ctx) { node->run(ctx); });
    submit(op, node->device, pushed.reads, pushed.writes, node->props);
  }
}

}  // namespace tandem::detail
