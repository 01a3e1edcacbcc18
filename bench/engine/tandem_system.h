// TandemSystem: a tandem engine (threaded or naive) seen as a PushSystem.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "busy_work.h"
#include "tandem/engine.h"

namespace tandem::bench {

class TandemSystem {
 public:
  using Var = tandem::Var;

  class VarSet {
   public:
    VarSet(Engine& engine, std::size_t count) : engine_(&engine) {
      vars_.reserve(count);
      for (std::size_t i = 0; i < count; ++i) vars_.push_back(engine.new_var());
    }
    VarSet(VarSet&& other) noexcept = default;
    VarSet& operator=(VarSet&&) = delete;
    ~VarSet() {
      for (Var var : vars_) engine_->delete_var(var);
      if (!vars_.empty()) engine_->wait_all();
    }
    std::span<const Var> handles() const { return vars_; }

   private:
    Engine* engine_;
    std::vector<Var> vars_;
  };

  explicit TandemSystem(const EngineConfig& config) : engine_(Engine::create(config)) {}

  VarSet make_vars(std::size_t count) { return VarSet(*engine_, count); }

  void push(Work work, std::span<const Var> reads, std::span<const Var> writes) {
    engine_->push([work] { run_work(work); }, tandem::cpu(), VarList(reads), VarList(writes),
                  {.name = "bench_op"});
  }
  // The same on a copy queue (Queue::copy_h2d): the ops a priority lane serves.
  void push_copy(Work work, std::span<const Var> reads, std::span<const Var> writes) {
    engine_->push([work] { run_work(work); }, tandem::cpu(), VarList(reads), VarList(writes),
                  {.name = "bench_copy", .queue = tandem::Queue::copy_h2d});
  }
  void wait_all() { engine_->wait_all(); }

  Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<Engine> engine_;
};

}  // namespace tandem::bench
